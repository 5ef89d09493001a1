// Generators of hostile input for the reliability suite: seeded, so a failing case is reproduced by
// its seed and index (SWITCHYARD_FUZZ_SEED). Every value is built from the PRNG alone, never from
// the clock or Math.random.

/** mulberry32: small, fast, good enough to spread test cases. */
export function prng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export class Fuzz {
  constructor(readonly next: () => number) {}

  int(max: number): number {
    return Math.floor(this.next() * max);
  }

  pick<T>(list: readonly T[]): T {
    return list[this.int(list.length)];
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  string(maxLength = 24): string {
    const alphabets = ['abcdefghijklmnopqrstuvwxyz', '0123456789', ' \t\n\r', '"\\/{}[]:,', '\u0000\u0001\u001f\u007f', 'éß漢字🙂\u202e\ufeff', '\ud800'];
    let out = '';
    const length = this.int(maxLength + 1);
    for (let i = 0; i < length; i++) out += this.pick([...this.pick(alphabets)]);
    return out;
  }

  /** A JSON value of any type, odd ones favoured. */
  value(depth = 0): unknown {
    switch (this.int(depth > 2 ? 7 : 9)) {
      case 0:
        return null;
      case 1:
        return this.chance(0.5);
      case 2:
        return this.pick([0, -1, 1, 0.5, -0.0001, 2 ** 53, -(2 ** 53), 1e308, -1e308, 3, 21, 129, 4097, 1e21]);
      case 3:
        return this.string();
      case 4:
        return '';
      case 5:
        return this.pick(['auto', 'none', 'required', 'user', 'message', 'function', 'high', 'text', 'json_schema', 'resp_1', 'conv_1', 'true', '{}']);
      case 6:
        return this.int(1000);
      case 7:
        return Array.from({ length: this.int(4) }, () => this.value(depth + 1));
      default: {
        const object: Record<string, unknown> = {};
        for (let i = this.int(4); i > 0; i--) object[this.pick(['type', 'role', 'content', 'name', 'id', 'text', 'call_id', 'output', this.string(8)])] = this.value(depth + 1);
        return object;
      }
    }
  }
}

/** Every top-level parameter of `POST /v1/responses` the gateway reads (and a few it does not). */
export const CREATE_FIELDS = [
  'model', 'input', 'instructions', 'tools', 'tool_choice', 'parallel_tool_calls', 'max_tool_calls', 'max_output_tokens', 'temperature',
  'top_p', 'store', 'stream', 'background', 'previous_response_id', 'conversation', 'text', 'reasoning', 'truncation', 'metadata',
  'include', 'user', 'safety_identifier', 'prompt_cache_key', 'service_tier', 'top_logprobs', 'presence_penalty', 'frequency_penalty',
  'context_management', 'prompt', 'stream_options',
] as const;

export const ITEM_TYPES = [
  'message', 'function_call', 'function_call_output', 'custom_tool_call', 'custom_tool_call_output', 'reasoning', 'tool_search_call',
  'tool_search_output', 'mcp_list_tools', 'mcp_call', 'mcp_approval_request', 'mcp_approval_response', 'web_search_call',
  'file_search_call', 'code_interpreter_call', 'item_reference', 'compaction', 'computer_call', 'local_shell_call', 'nonsense', '',
];

export const TOOL_TYPES = [
  'function', 'custom', 'mcp', 'web_search', 'web_search_preview', 'file_search', 'code_interpreter', 'tool_search', 'namespace',
  'computer_use_preview', 'image_generation', 'local_shell', 'shell', 'apply_patch', 'vendor_x', '',
];

/** URLs a hostile client might hand the gateway to fetch: none may be reached (all private, loopback or invalid). */
export const HOSTILE_URLS = [
  'http://127.0.0.1:1/', 'https://10.0.0.1/mcp', 'https://169.254.169.254/latest/meta-data/', 'https://[::1]/', 'http://0x7f.1/',
  'https://user:secret@192.168.0.1/?token=abc', 'file:///etc/passwd', 'gopher://127.0.0.1/', 'not a url', 'https://[fd00::1]/',
];

/** `depth` levels of nesting as JSON text (a value this deep could not be stringified here). */
export function deepText(depth: number, open = '{"a":', close = '}'): string {
  return open.repeat(depth) + '1' + close.repeat(depth);
}
