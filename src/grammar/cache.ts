import { FormatChecker, type GrammarSyntax } from './format-checker.js';

/**
 * Compiled formats by definition text, least recently used evicted: clients resend the same
 * tool declarations (Codex's apply_patch grammar) on every request, so each is compiled once
 * per process. Invalid definitions are not cached (they throw).
 */
export class FormatCache {
  private readonly entries = new Map<string, FormatChecker>();

  constructor(private readonly capacity = 256) {}

  get(syntax: GrammarSyntax, definition: string): FormatChecker {
    const key = `${syntax}\u0000${definition}`;
    const hit = this.entries.get(key);
    if (hit) {
      // re-insert: Map keeps insertion order, so the first key is the least recently used
      this.entries.delete(key);
      this.entries.set(key, hit);
      return hit;
    }
    const compiled = FormatChecker.compile(syntax, definition);
    this.entries.set(key, compiled);
    if (this.entries.size > this.capacity) this.entries.delete(this.entries.keys().next().value!);
    return compiled;
  }

  get size(): number {
    return this.entries.size;
  }
}
