// Regex flags: the letters of a `regex` format's flags and of inline `(?i)` / `(?i-s:…)` groups.

export interface RegexFlags {
  /** `i`: case-insensitive. */
  caseInsensitive?: boolean;
  /** `s`: `.` matches newline too. */
  dotAll?: boolean;
  /** `m`: `^`/`$` match at line boundaries. */
  multiLine?: boolean;
  /** `x`: whitespace and `#` comments outside classes are ignored. */
  extended?: boolean;
}

const FLAG_BY_LETTER: Readonly<Record<string, keyof RegexFlags>> = { i: 'caseInsensitive', s: 'dotAll', m: 'multiLine', x: 'extended' };

/** Parses `i`, `s`, `m`, `x` (and the no-op `u`) flag letters, turned on over `base`. */
export function parseFlagLetters(letters: string, base: RegexFlags = {}): RegexFlags | undefined {
  return setFlags(letters, { ...base }, true);
}

/** `i-s` style flag specs inside `(?…)`: letters before `-` turn on, after it turn off. */
export function applyFlagSpec(spec: string, flags: RegexFlags): RegexFlags | undefined {
  const [on, off = ''] = spec.split('-');
  const next = parseFlagLetters(on, flags);
  return next && setFlags(off, next, false);
}

/** Sets each lettered flag in `flags` to `value`; undefined for an unknown letter. */
function setFlags(letters: string, flags: RegexFlags, value: boolean): RegexFlags | undefined {
  for (const letter of letters) {
    const flag = FLAG_BY_LETTER[letter];
    if (flag) flags[flag] = value;
    else if (letter !== 'u') return undefined;
  }
  return flags;
}
