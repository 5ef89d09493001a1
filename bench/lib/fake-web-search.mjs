// A gateway-owned execution that does no work, for measuring the gateway's own cost per tool round
// (bench/tools.mjs, bench/hotpath.mjs).

/** A minimal web_search execution: opens and closes a web_search_call item; no real work. */
export function webSearchExecution() {
  return {
    parallelSafe: true,
    timeoutMs: 5000,
    begin(inv, emit) {
      const item = { type: 'web_search_call', id: emit.newId('ws'), status: 'in_progress', action: { type: 'search', query: String(inv.args.query ?? '') } };
      const index = emit.add(item);
      emit.event('response.web_search_call.in_progress', index);
      return { index, item };
    },
    async run() {
      return { output: 'ok', isError: false };
    },
    end(_inv, outcome, emit, state) {
      emit.event('response.web_search_call.completed', state.index);
      emit.done(state.index, { ...state.item, status: outcome.isError ? 'failed' : 'completed' });
    },
  };
}
