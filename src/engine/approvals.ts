import type { ResponseStore } from '../store/store.js';
import type { ApprovedCall } from '../tools/types.js';
import type { PendingGatewayCall } from './types.js';

export type { ApprovedCall };

/**
 * Uses up the answers of a turn that is starting to run; returns the approved calls to run now.
 * An answer used up meanwhile (the same approval raced by another request) is not run: its call
 * gets an error result for the model instead.
 */
export async function useApprovals(answers: readonly ApprovedCall[], store: ResponseStore, tenant?: string): Promise<PendingGatewayCall[]> {
  const calls: PendingGatewayCall[] = [];
  for (const answer of answers) {
    const verdict = await store.consumeApproval(answer.call.callId, answer.digest, tenant);
    if (!answer.approve) continue;
    const pending: PendingGatewayCall = { call: answer.call, entry: answer.entry, approvalRequestId: answer.call.callId };
    if (verdict !== 'ok') pending.refusal = `the approval '${answer.call.callId}' could not be used (${verdict}); the call was not run.`;
    calls.push(pending);
  }
  return calls;
}
