/** A grammar or regex definition that cannot be compiled; `line`/`column` are 1-based. */
export class GrammarDefinitionError extends Error {
  constructor(
    readonly reason: string,
    readonly line: number,
    readonly column: number,
    /**
     * True when the definition uses something valid elsewhere (LLGuidance extensions such as
     * `%json` or `<[token]>`) that this recognizer does not implement: not the client's fault.
     */
    readonly unsupported = false,
  ) {
    super(`line ${line}, column ${column}: ${reason}`);
  }
}

/**
 * The work budget of one check ran out (a pathological grammar/input pair). Checks fail safe:
 * the caller reports "could not be checked" instead of hanging.
 */
export class WorkLimitError extends Error {
  constructor(readonly limit: number) {
    super(`the check needed more than ${limit} steps and was stopped`);
  }
}

/** Counts the steps of one check (regex threads, Earley items) against a budget. */
export class WorkBudget {
  steps = 0;
  constructor(readonly limit: number) {}

  spend(steps: number): void {
    this.steps += steps;
    if (this.steps > this.limit) throw new WorkLimitError(this.limit);
  }
}

/** Line and column (1-based, in code points) of a code-point offset. */
export function lineColumn(codePoints: ArrayLike<number>, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset && i < codePoints.length; i++) {
    if (codePoints[i] === 10) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}
