import type { JsonObject } from '../../protocol/responses.js';
import type { ToolHandler } from '../handler.js';
import { ToolDeclarationError, type RegistryEntry } from '../types.js';
import { isPlainObject, optionalStringArray } from '../validate.js';
import { validateCodeInterpreterCall } from './items.js';

/** The function the model sees, as OpenAI's own models see the code interpreter. */
export const CODE_INTERPRETER_FUNCTION = 'python';

const MEMORY_LIMIT = /^\d{1,6}[mg]$/i;

/**
 * `code_interpreter`: the model writes Python, the gateway runs it in a sandboxed container
 * (src/containers/code-interpreter-tool.ts). An executor that exists but cannot run here (no
 * bubblewrap, no Python libraries) refuses the request with a `400` naming this declaration —
 * code is never run unsandboxed.
 */
export const codeInterpreterHandler: ToolHandler<JsonObject> = {
  types: ['code_interpreter'],
  owner: 'gateway',
  callItemTypes: ['code_interpreter_call'],
  items: { code_interpreter_call: validateCodeInterpreterCall },
  choiceType: 'code_interpreter',
  replayCall(item) {
    // an earlier run, as the model made it: a python call; its output only when the item kept it
    // (outputs are on the public item only when `include` asked; the stored record has them all)
    const outputs = Array.isArray(item.outputs) ? (item.outputs as JsonObject[]) : undefined;
    return { name: CODE_INTERPRETER_FUNCTION, arguments: JSON.stringify({ code: typeof item.code === 'string' ? item.code : '' }), ...(outputs ? { output: logsOf(outputs) } : {}) };
  },
  parse(raw, param) {
    const container = raw.container;
    if (typeof container === 'string') {
      if (container.length === 0) throw new ToolDeclarationError(`Invalid '${param}.container': expected a container id or an object.`, `${param}.container`, 'invalid_value');
      return raw;
    }
    if (!isPlainObject(container)) {
      throw new ToolDeclarationError(`Missing required parameter: '${param}.container'.`, `${param}.container`, 'missing_required_parameter');
    }
    if (container.type !== 'auto') throw new ToolDeclarationError(`Invalid '${param}.container.type': expected 'auto'.`, `${param}.container.type`, 'invalid_value');
    const memory = container.memory_limit;
    if (memory !== undefined && memory !== null && (typeof memory !== 'string' || !MEMORY_LIMIT.test(memory))) {
      throw new ToolDeclarationError(`Invalid '${param}.container.memory_limit': expected a size such as '1g' or '4g'.`, `${param}.container.memory_limit`, 'invalid_value');
    }
    optionalStringArray(container, 'file_ids', `${param}.container`);
    const policy = container.network_policy;
    // boxes have no network at all: an allow-list cannot be honoured, so it is refused rather than ignored
    if (policy !== undefined && policy !== null && !(isPlainObject(policy) && policy.type === 'disabled')) {
      throw new ToolDeclarationError(`Unsupported '${param}.container.network_policy': code_interpreter containers on this gateway have no network access; only {"type": "disabled"} is accepted.`, `${param}.container.network_policy`, 'unsupported_parameter');
    }
    return raw;
  },
  normalize(declaration, param, ctx): RegistryEntry[] {
    let execution;
    try {
      execution = ctx.executionFor('code_interpreter', declaration, ctx.request);
    } catch (err) {
      // the executor refuses (sandbox unavailable, file_ids without a Files API): name this declaration
      if (err instanceof ToolDeclarationError) throw new ToolDeclarationError(err.message, err.param === 'tools' ? param : `${param}.${err.param}`, err.code);
      throw err;
    }
    if (!execution) {
      ctx.logOnce('code_interpreter', 'code_interpreter omitted from the model: no executor configured');
      return [];
    }
    return [
      {
        modelName: CODE_INTERPRETER_FUNCTION,
        fn: {
          name: CODE_INTERPRETER_FUNCTION,
          description:
            'Run Python 3 in a stateful sandbox (variables persist between calls) with numpy, pandas and matplotlib. ' +
            'Files are read from and written to /mnt/data; link files you wrote as sandbox:/mnt/data/<name>. ' +
            'matplotlib figures are shown to the user. There is no internet access.',
          parameters: { type: 'object', properties: { code: { type: 'string', description: 'The Python code to run.' } }, required: ['code'], additionalProperties: false },
        },
        shape: 'gateway',
        identity: { type: 'code_interpreter', name: CODE_INTERPRETER_FUNCTION },
        owner: 'gateway',
        execution,
        declaredAt: param,
      },
    ];
  },
};

/** What a run printed, as the model is told it: its logs, and a note for figures shown to the user. */
function logsOf(outputs: readonly JsonObject[]): string {
  const logs = outputs.filter((o) => o.type === 'logs' && typeof o.logs === 'string').map((o) => o.logs as string);
  const images = outputs.filter((o) => o.type === 'image').length;
  return [...logs, ...(images > 0 ? [`[${images} figure(s) shown to the user]`] : [])].join('\n') || '(no output)';
}
