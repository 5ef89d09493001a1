/**
 * Incrementally decodes the string value of one top-level key out of a JSON object that
 * arrives in fragments — e.g. `{"input": "*** Begin Patch\n…"}` streamed by a model calling a
 * custom tool — so the raw text can be streamed before the object is complete, with no JSON
 * escaping leaking through. Anything that is not that simple shape is left to the caller
 * (`decoded` stays false) to resolve from the complete text.
 */
export class JsonStringFieldDecoder {
  private state: 'prefix' | 'string' | 'done' | 'gave_up' = 'prefix';
  private prefix = '';
  private escape: string | null = null;
  private highSurrogate: number | null = null;
  private readonly expectedPrefix: RegExp;

  constructor(key: string) {
    const escaped = key.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    this.expectedPrefix = new RegExp(`^\\s*\\{\\s*"${escaped}"\\s*:\\s*"$`);
  }

  /** True once the value's opening quote was found, i.e. deltas returned so far are the value's start. */
  get decoding(): boolean {
    return this.state === 'string' || this.state === 'done';
  }

  get closed(): boolean {
    return this.state === 'done';
  }

  /** Feeds a fragment; returns the newly decoded part of the string value ('' when none). */
  push(fragment: string): string {
    let out = '';
    for (let i = 0; i < fragment.length; i++) {
      const ch = fragment[i];
      if (this.state === 'prefix') {
        this.prefix += ch;
        if (ch === '"' && this.expectedPrefix.test(this.prefix)) {
          this.state = 'string';
        } else if (!couldStillMatch(this.prefix)) {
          this.state = 'gave_up';
          return out;
        }
        continue;
      }
      if (this.state !== 'string') return out;
      if (this.escape !== null) {
        this.escape += ch;
        const decoded = this.decodeEscape();
        if (decoded !== null) out += decoded;
        continue;
      }
      if (ch === '\\') {
        this.escape = '';
      } else if (ch === '"') {
        out += this.flushSurrogate();
        this.state = 'done';
      } else {
        out += this.flushSurrogate() + ch;
      }
    }
    return out;
  }

  private decodeEscape(): string | null {
    const esc = this.escape!;
    if (esc[0] === 'u') {
      if (esc.length < 5) return null;
      this.escape = null;
      const code = parseInt(esc.slice(1), 16);
      if (code >= 0xd800 && code <= 0xdbff) {
        const pending = this.flushSurrogate();
        this.highSurrogate = code;
        return pending;
      }
      if (code >= 0xdc00 && code <= 0xdfff && this.highSurrogate !== null) {
        const pair = String.fromCharCode(this.highSurrogate, code);
        this.highSurrogate = null;
        return pair;
      }
      return this.flushSurrogate() + String.fromCharCode(code);
    }
    this.escape = null;
    const simple = SIMPLE_ESCAPES[esc];
    return this.flushSurrogate() + (simple ?? esc);
  }

  private flushSurrogate(): string {
    if (this.highSurrogate === null) return '';
    const lone = String.fromCharCode(this.highSurrogate);
    this.highSurrogate = null;
    return lone;
  }
}

const SIMPLE_ESCAPES: Record<string, string> = { '"': '"', '\\': '\\', '/': '/', b: '\b', f: '\f', n: '\n', r: '\r', t: '\t' };

/** Whether `text` may still grow into `{ "key" : "` — checked loosely: only whitespace, `{`, a quoted key and `:`. */
function couldStillMatch(text: string): boolean {
  return /^\s*(\{\s*("[^"]*("\s*(:\s*)?)?)?)?$/.test(text);
}
