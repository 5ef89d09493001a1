import type { ExecutionFactory } from '../handler.js';
import { ID_PREFIX, type JsonObject } from '../../protocol/responses.js';
import type { PreflightResult } from '../../sandbox/preflight.js';
import { ToolDeclarationError, toolError, type GatewayExecution, type GatewayInvocation, type PlannedInvocation, type ToolOutcome } from '../types.js';
import { ContainerError, isContainerId, newContainerId, type ContainerRun, type ContainerService } from '../../containers/service.js';
import { DEFAULT_TENANT } from '../../containers/store.js';

export const INCLUDE_OUTPUTS = 'code_interpreter_call.outputs';

interface CallState {
  index: number;
  id: string;
  code: string;
}

/** What `end` projects: the run, or why it could not happen. */
interface Detail {
  run?: ContainerRun;
}

/**
 * `code_interpreter` run by the gateway. Each declaration resolves its container once per
 * request: an explicit id, or `auto` — the container the conversation used before (the last
 * `code_interpreter_call` in history), else a new one, created on the first call. Each call is a
 * `code_interpreter_call` item: in_progress → code delta/done → interpreting → completed, with
 * `logs` and `image` outputs when the request includes `code_interpreter_call.outputs`. Files the
 * code writes become container files, cited where the answer names them.
 */
export function codeInterpreterExecutionFactory(service: ContainerService, preflight: () => PreflightResult, timeoutMs: number): ExecutionFactory {
  return (declaration, request) => {
    const check = preflight();
    if (!check.ok) throw new ToolDeclarationError(`code_interpreter is not available on this gateway: ${check.problem}`, 'tools', 'code_interpreter_unavailable');
    const container = declaration.container;
    const auto = typeof container === 'string' ? undefined : (container as JsonObject);
    const fileIds = Array.isArray(auto?.file_ids) ? (auto!.file_ids as string[]) : undefined;
    if (fileIds && fileIds.length > 0 && !service.acceptsFileIds) {
      throw new ToolDeclarationError("'file_ids' needs the Files API, which this gateway does not have yet; upload files into a container with POST /v1/containers/{id}/files and pass its id.", 'container.file_ids', 'unsupported_parameter');
    }
    const containerId = typeof container === 'string' ? container : (lastContainerOf(request.priorItems ?? []) ?? newContainerId());
    return execution(service, {
      owner: request.tenant ?? DEFAULT_TENANT,
      containerId,
      auto: auto ? { memoryLimit: typeof auto.memory_limit === 'string' ? auto.memory_limit : undefined, fileIds } : undefined,
      includeOutputs: request.include.includes(INCLUDE_OUTPUTS),
      timeoutMs,
    });
  };
}

interface Options {
  /** The request's tenant: it reaches its own containers only. */
  owner: string;
  containerId: string;
  auto: { memoryLimit: string | undefined; fileIds: string[] | undefined } | undefined;
  includeOutputs: boolean;
  timeoutMs: number;
}

function execution(service: ContainerService, options: Options): GatewayExecution {
  return {
    // one kernel per container: its calls run one after another
    parallelSafe: false,
    timeoutMs: options.timeoutMs,
    begin(inv, emit): CallState {
      const id = emit.newId(ID_PREFIX.codeInterpreter);
      const code = codeOf(inv);
      const index = emit.add({ type: 'code_interpreter_call', id, status: 'in_progress', code: '', container_id: options.containerId, outputs: null });
      emit.event('response.code_interpreter_call.in_progress', index);
      // the call is dispatched complete: its code streams as one delta
      if (code) emit.event('response.code_interpreter_call_code.delta', index, { delta: code });
      emit.event('response.code_interpreter_call_code.done', index, { code });
      emit.event('response.code_interpreter_call.interpreting', index);
      return { index, id, code };
    },
    async run(inv: GatewayInvocation): Promise<ToolOutcome> {
      const code = codeOf(inv);
      if (!code.trim()) return toolError("the python tool needs a non-empty 'code' string.");
      try {
        if (options.auto) await service.ensureAuto(options.containerId, options.owner, options.auto.memoryLimit, options.auto.fileIds);
        const run = await service.run(options.containerId, code, inv.signal, options.owner);
        if (run.files.length > 0) {
          inv.emit.registerFiles?.(run.files.map((f) => ({ containerId: f.containerId, fileId: f.id, filename: f.path.slice(f.path.lastIndexOf('/') + 1), path: f.path })));
        }
        // a killed program failed the call; the model reads what it printed all the same
        return { kind: run.result.status === 'killed' ? 'fatal' : 'ok', output: modelOutput(run), detail: { run } satisfies Detail };
      } catch (err) {
        if (err instanceof ContainerError) return toolError(err.message);
        throw err;
      }
    },
    end(inv: PlannedInvocation, outcome, emit, state) {
      const { index, id, code } = state as CallState;
      const run = (outcome.detail as Detail | undefined)?.run;
      const failed = !run || run.result.status === 'killed';
      if (!failed) emit.event('response.code_interpreter_call.completed', index);
      const outputs = options.includeOutputs ? publicOutputs(run, outcome) : null;
      emit.done(index, { type: 'code_interpreter_call', id, status: failed ? 'failed' : 'completed', code, container_id: options.containerId, outputs });
    },
  };
}

function codeOf(inv: PlannedInvocation): string {
  return typeof inv.args.code === 'string' ? inv.args.code : '';
}

/** `logs` (what the code printed, or why it did not run) and one `image` per figure (PNG data URL). */
function publicOutputs(run: ContainerRun | undefined, outcome: ToolOutcome): JsonObject[] {
  if (!run) return [{ type: 'logs', logs: outcome.output }];
  const outputs: JsonObject[] = [];
  if (run.result.logs) outputs.push({ type: 'logs', logs: run.result.logs });
  for (const png of run.result.images) outputs.push({ type: 'image', url: `data:image/png;base64,${png}` });
  return outputs;
}

/** What the model reads: the logs, then what it cannot see (figures, files). */
function modelOutput(run: ContainerRun): string {
  const parts: string[] = [];
  parts.push(run.result.logs || (run.result.status === 'ok' ? '(no output)' : ''));
  if (run.result.images.length > 0) parts.push(`[${run.result.images.length} figure(s) rendered and shown to the user as PNG]`);
  if (run.files.length > 0) parts.push(`[files written: ${run.files.map((f) => `sandbox:${f.path} (${f.bytes} bytes)`).join(', ')}]`);
  return parts.filter(Boolean).join('\n');
}

/** The container of the conversation's last code_interpreter call, if any. */
function lastContainerOf(items: readonly JsonObject[]): string | undefined {
  for (let i = items.length - 1; i >= 0; i--) {
    const item = items[i];
    if (item.type === 'code_interpreter_call' && typeof item.container_id === 'string' && isContainerId(item.container_id)) return item.container_id;
  }
  return undefined;
}
