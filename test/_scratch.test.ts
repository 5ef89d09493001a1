import { it } from 'vitest';
import { fixtureBytes, replayChat, replayRegistry, decodeResponsesRaw, replayResponses } from './helpers/replay.js';
it('dump', () => {
  const reg = replayRegistry();
  for (const name of ['custom-apply-patch', 'length', 'whitespace-before-call']) {
    const ev = replayChat([fixtureBytes('chat', name)], reg);
    console.log(name, JSON.stringify(ev.filter(e => !['response.created','response.in_progress'].includes(e.type)), null, 0).slice(0, 6000));
  }
  console.log(JSON.stringify(decodeResponsesRaw([fixtureBytes('responses', 'vllm-incomplete')])));
});
