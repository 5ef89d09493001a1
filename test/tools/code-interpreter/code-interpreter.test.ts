// code_interpreter end to end: the official `openai` SDK → the gateway → the simulator (scripted
// to call `python`) → a real bubblewrap sandbox with the system Python. Also the Containers API.
// The Containers API and blocking turns are answered in process (test/helpers/in-process.ts);
// the streamed turn and the disconnect go over a socket.
import OpenAI, { BadRequestError, NotFoundError, toFile } from 'openai';
import type { ResponseCodeInterpreterToolCall, ResponseOutputMessage, ResponseStreamEvent } from 'openai/resources/responses/responses';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CODE_INTERPRETER_CONFIG, type CodeInterpreterConfig } from '../../../src/containers/config.js';
import { scripted, startTestGateway, type TestGateway } from '../../helpers/gateway.js';
import { inProcessFetch } from '../../helpers/in-process.js';
import { sandboxDir, sandboxSkipReason, SANDBOX_PYTHON } from '../../helpers/sandbox.js';
import { checkStreamInvariants } from '../../helpers/spec.js';

const TOOLS = [{ type: 'code_interpreter' as const, container: { type: 'auto' as const } }];

function codeConfig(dir: string, overrides: Partial<CodeInterpreterConfig> = {}): CodeInterpreterConfig {
  return { ...DEFAULT_CODE_INTERPRETER_CONFIG, python: SANDBOX_PYTHON, dir, poolSize: 1, uidBase: 230_000 + (process.pid % 1000) * 20, ...overrides };
}

const python = (code: string) => ({ tool_calls: [{ name: 'python', arguments: { code } }] });

describe.skipIf(sandboxSkipReason !== undefined)(`code_interpreter through the gateway${sandboxSkipReason ? ` (${sandboxSkipReason})` : ''}`, () => {
  let gw: TestGateway;
  /** Over a socket: streamed turns and disconnects. */
  let client: OpenAI;
  /** In process: the Containers and Files routes, blocking turns. */
  let inProcess: OpenAI;
  let folder: ReturnType<typeof sandboxDir>;

  beforeAll(async () => {
    folder = sandboxDir();
    gw = await startTestGateway({ config: { codeInterpreter: codeConfig(folder.dir) } });
    client = new OpenAI({ baseURL: gw.baseURL, apiKey: 'test', maxRetries: 0, timeout: 120_000 });
    inProcess = new OpenAI({ baseURL: gw.baseURL, apiKey: 'test', maxRetries: 0, timeout: 120_000, fetch: inProcessFetch(gw.gateway) });
  });
  afterAll(async () => {
    await gw?.close();
    folder?.remove();
  });

  it('streams a turn that computes with pandas, plots, writes a CSV (downloadable, cited) and keeps state across calls', async () => {
    const script = {
      rounds: [
        python('import pandas as pd\nsales = pd.DataFrame({"region": ["north", "south", "north", "east"], "amount": [10, 20, 30, 5]})\ntotals = sales.groupby("region")["amount"].sum()\nprint(totals.to_dict())'),
        python('import matplotlib.pyplot as plt\ntotals.plot(kind="bar")\nplt.title("Sales by region")\ntotals.to_csv("totals.csv")\nprint("rows:", len(totals))'),
        { text: 'North sold the most. The totals are in [totals.csv](sandbox:/mnt/data/totals.csv).' },
      ],
    };
    const stream = await client.responses.create({ model: 'sim', input: scripted(script), tools: TOOLS, include: ['code_interpreter_call.outputs'], stream: true });
    const events: ResponseStreamEvent[] = [];
    for await (const event of stream) events.push(event);
    expect(checkStreamInvariants(events as never)).toEqual([]);
    const completed = events.at(-1)!;
    expect(completed.type).toBe('response.completed');
    const response = (completed as { response: OpenAI.Responses.Response }).response;

    const calls = response.output.filter((i): i is ResponseCodeInterpreterToolCall => i.type === 'code_interpreter_call');
    expect(calls).toHaveLength(2);
    expect(calls[0].id).toMatch(/^ci_/);
    expect(calls[0].container_id).toMatch(/^cntr_/);
    expect(calls[1].container_id).toBe(calls[0].container_id);
    expect(calls.map((c) => c.status)).toEqual(['completed', 'completed']);
    expect(calls[0].outputs).toEqual([{ type: 'logs', logs: "{'east': 5, 'north': 40, 'south': 20}\n" }]);
    // the second call used `totals` from the first: state persisted in the container's kernel
    const second = calls[1].outputs!;
    expect(second[0]).toEqual({ type: 'logs', logs: 'rows: 3\n' });
    const image = second.find((o): o is ResponseCodeInterpreterToolCall.Image => o.type === 'image')!;
    expect(image.url).toMatch(/^data:image\/png;base64,/);
    expect(Buffer.from(image.url.split(',')[1], 'base64').subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));

    // the lifecycle of one call, in order (responses-api.md §5)
    const first = calls[0].id;
    const lifecycle = events.filter((e) => 'item_id' in e && e.item_id === first).map((e) => e.type);
    expect(lifecycle).toEqual([
      'response.code_interpreter_call.in_progress',
      'response.code_interpreter_call_code.delta',
      'response.code_interpreter_call_code.done',
      'response.code_interpreter_call.interpreting',
      'response.code_interpreter_call.completed',
    ]);
    const added = events.find((e) => e.type === 'response.output_item.added' && e.item.id === first) as { item: ResponseCodeInterpreterToolCall };
    expect(added.item).toMatchObject({ status: 'in_progress', code: '', outputs: null });

    // the answer cites the CSV the code wrote; the citation names a downloadable container file
    const message = response.output.find((i): i is ResponseOutputMessage => i.type === 'message')!;
    const text = message.content[0];
    if (text.type !== 'output_text') throw new Error('expected output_text');
    const citation = text.annotations.find((a) => a.type === 'container_file_citation');
    expect(citation).toMatchObject({ container_id: calls[0].container_id, filename: 'totals.csv' });
    if (citation?.type !== 'container_file_citation') throw new Error('no citation');
    expect(text.text.slice(citation.start_index, citation.end_index)).toBe('sandbox:/mnt/data/totals.csv');
    const content = await client.containers.files.content.retrieve(citation.file_id, { container_id: citation.container_id });
    expect(await content.text()).toBe('region,amount\neast,5\nnorth,40\nsouth,20\n');
    const listed = await client.containers.files.list(citation.container_id);
    expect(listed.data.map((f) => f.path)).toContain('/mnt/data/totals.csv');

    // a follow-up turn on the chain reuses the container: the kernel still knows `totals`
    const next = await client.responses.create({
      model: 'sim',
      previous_response_id: response.id,
      input: scripted({ rounds: [python('print(int(totals["north"]) * 2)'), { text: 'done' }] }, 'again'),
      tools: TOOLS,
      include: ['code_interpreter_call.outputs'],
    });
    const again = next.output.find((i): i is ResponseCodeInterpreterToolCall => i.type === 'code_interpreter_call')!;
    expect(again.container_id).toBe(calls[0].container_id);
    expect(again.outputs).toEqual([{ type: 'logs', logs: '80\n' }]);
    // the model saw the earlier runs of this chain as python calls with their logs
    const upstream = gw.simulator.requests.at(-1)!.body as { messages: Array<{ role: string; tool_calls?: Array<{ function: { name: string } }>; content?: string }> };
    expect(upstream.messages.filter((m) => m.tool_calls?.[0]?.function.name === 'python').length).toBeGreaterThanOrEqual(3);
  }, 180_000);

  it('leaves outputs out unless included, and tells the model about errors in its code', async () => {
    const response = await client.responses.create({
      model: 'sim',
      input: scripted({ rounds: [python('undefined_name + 1'), { text: 'oops' }] }),
      tools: TOOLS,
    });
    const call = response.output.find((i): i is ResponseCodeInterpreterToolCall => i.type === 'code_interpreter_call')!;
    expect(call).toMatchObject({ status: 'completed', code: 'undefined_name + 1', outputs: null });
    const toolResult = (gw.simulator.requests.at(-1)!.body as { messages: Array<{ role: string; content: string }> }).messages.find((m) => m.role === 'tool')!;
    expect(toolResult.content).toContain("NameError: name 'undefined_name' is not defined");
  }, 120_000);

  it('runs in a container made through the Containers API, with a file uploaded by the SDK', async () => {
    const container = await inProcess.containers.create({ name: 'uploads', memory_limit: '1g' });
    expect(container).toMatchObject({ object: 'container', name: 'uploads', memory_limit: '1g', expires_after: { anchor: 'last_active_at', minutes: 20 } });
    const uploaded = await inProcess.containers.files.create(container.id, { file: await toFile(Buffer.from('x,y\n1,2\n3,4\n'), 'points.csv') });
    expect(uploaded).toMatchObject({ object: 'container.file', path: '/mnt/data/points.csv', bytes: 12, source: 'user', container_id: container.id });
    const response = await inProcess.responses.create({
      model: 'sim',
      input: scripted({ rounds: [python('import pandas as pd\nprint(pd.read_csv("/mnt/data/points.csv")["y"].sum())'), { text: 'ok' }] }),
      tools: [{ type: 'code_interpreter', container: container.id }],
      include: ['code_interpreter_call.outputs'],
    });
    const call = response.output.find((i): i is ResponseCodeInterpreterToolCall => i.type === 'code_interpreter_call')!;
    expect(call.container_id).toBe(container.id);
    expect(call.outputs).toEqual([{ type: 'logs', logs: '6\n' }]);

    expect((await inProcess.containers.retrieve(container.id)).id).toBe(container.id);
    const ids = [];
    for await (const c of inProcess.containers.list({ limit: 100 })) ids.push(c.id);
    expect(ids).toContain(container.id);
    expect((await inProcess.containers.files.retrieve(uploaded.id, { container_id: container.id })).path).toBe('/mnt/data/points.csv');
    await inProcess.containers.files.delete(uploaded.id, { container_id: container.id });
    await expect(inProcess.containers.files.retrieve(uploaded.id, { container_id: container.id })).rejects.toBeInstanceOf(NotFoundError);
    await inProcess.containers.delete(container.id);
    await expect(inProcess.containers.retrieve(container.id)).rejects.toBeInstanceOf(NotFoundError);

    // a deleted container: the call fails (an error result for the model), the response completes
    const gone = await inProcess.responses.create({ model: 'sim', input: scripted({ rounds: [python('1'), { text: 'x' }] }), tools: [{ type: 'code_interpreter', container: container.id }] });
    expect(gone.status).toBe('completed');
    expect(gone.output.find((i) => i.type === 'code_interpreter_call')).toMatchObject({ status: 'failed' });
  }, 120_000);

  it('a client that disconnects mid-run stops the box; the container runs again on a fresh kernel', async () => {
    const container = await client.containers.create({ name: 'abort' });
    const controller = new AbortController();
    const stream = await client.responses.create(
      {
        model: 'sim',
        input: scripted({ rounds: [python('lost = 1\nimport time\ntime.sleep(120)'), { text: 'never' }] }),
        tools: [{ type: 'code_interpreter', container: container.id }],
        stream: true,
      },
      { signal: controller.signal },
    );
    const started = Date.now();
    // the SDK ends the iteration quietly when its request is aborted
    let sawTerminal = false;
    try {
      for await (const event of stream) {
        if (event.type === 'response.code_interpreter_call.interpreting') setTimeout(() => controller.abort(), 1_000);
        if (event.type === 'response.completed' || event.type === 'response.failed') sawTerminal = true;
      }
    } catch {
      // an abort surfacing as an error is fine too
    }
    expect(controller.signal.aborted).toBe(true);
    expect(sawTerminal).toBe(false);
    const next = await client.responses.create({
      model: 'sim',
      input: scripted({ rounds: [python('print("lost" in globals())'), { text: 'ok' }] }),
      tools: [{ type: 'code_interpreter', container: container.id }],
      include: ['code_interpreter_call.outputs'],
    });
    // the run was cut long before its 120 s sleep (or the 30 s soft timeout) ended
    expect(Date.now() - started).toBeLessThan(25_000);
    expect(next.output.find((i): i is ResponseCodeInterpreterToolCall => i.type === 'code_interpreter_call')!.outputs).toEqual([{ type: 'logs', logs: 'False\n' }]);
    await client.containers.delete(container.id);
  }, 120_000);

  it('copies input file_ids from the Files API into the container (containers.create and auto)', async () => {
    const file = await inProcess.files.create({ file: await toFile(Buffer.from('a,b\n5,6\n7,8\n'), 'table.csv'), purpose: 'user_data' });
    const container = await inProcess.containers.create({ name: 'with files', file_ids: [file.id] });
    const files = [];
    for await (const f of inProcess.containers.files.list(container.id)) files.push(f);
    expect(files).toEqual([expect.objectContaining({ path: '/mnt/data/table.csv', bytes: 12 })]);

    const response = await inProcess.responses.create({
      model: 'sim',
      input: scripted({ rounds: [python('import pandas as pd\nprint(pd.read_csv("/mnt/data/table.csv")["b"].sum())'), { text: 'ok' }] }),
      tools: [{ type: 'code_interpreter', container: { type: 'auto', file_ids: [file.id] } }],
      include: ['code_interpreter_call.outputs'],
    });
    const call = response.output.find((i): i is ResponseCodeInterpreterToolCall => i.type === 'code_interpreter_call')!;
    expect(call.outputs).toEqual([{ type: 'logs', logs: '14\n' }]);

    // an id the Files API does not hold: the call fails and the model is told, the turn goes on
    const missing = await inProcess.responses.create({
      model: 'sim',
      input: scripted({ rounds: [python('1'), { text: 'no file' }] }),
      tools: [{ type: 'code_interpreter', container: { type: 'auto', file_ids: ['file_doesnotexist'] } }],
    });
    expect(missing.status).toBe('completed');
    expect(missing.output.find((i) => i.type === 'code_interpreter_call')).toMatchObject({ status: 'failed' });
    const told = (gw.simulator.requests.at(-1)!.body as { messages: Array<{ role: string; content: string }> }).messages.find((m) => m.role === 'tool')!;
    expect(told.content).toContain('file_doesnotexist');
  }, 120_000);

  it('refuses bad container requests with OpenAI-shaped 400s', async () => {
    const bad = async (promise: Promise<unknown>, param: string) => {
      const err = await promise.then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(BadRequestError);
      expect((err as BadRequestError).param).toBe(param);
    };
    await bad(inProcess.containers.create({ name: 'x', memory_limit: 'lots' as never }), 'memory_limit');
    await bad(inProcess.containers.create({ name: 'x', file_ids: ['file_1'] }), 'file_ids[0]'); // no such file in the Files API
    await bad(inProcess.containers.create({ name: 'x', expires_after: { anchor: 'last_active_at', minutes: 0 } }), 'expires_after.minutes');
    await bad(inProcess.responses.create({ model: 'sim', input: 'hi', tools: [{ type: 'code_interpreter', container: { type: 'auto', memory_limit: 'huge' as never } }] }), 'tools[0].container.memory_limit');
    await bad(
      inProcess.responses.create({ model: 'sim', input: 'hi', tools: [{ type: 'code_interpreter', container: { type: 'auto', network_policy: { type: 'allowlist', allowed_domains: ['pypi.org'] } } }] }),
      'tools[0].container.network_policy',
    );
    await expect(inProcess.containers.retrieve('cntr_doesnotexist')).rejects.toBeInstanceOf(NotFoundError);
  }, 60_000);
});

describe('code_interpreter where the sandbox cannot run', () => {
  let gw: TestGateway;
  let folder: ReturnType<typeof sandboxDir>;
  beforeAll(async () => {
    folder = sandboxDir();
    gw = await startTestGateway({ config: { codeInterpreter: codeConfig(folder.dir, { python: '/nonexistent/python3' }) } });
  });
  afterAll(async () => {
    await gw?.close();
    folder?.remove();
  });

  it('refuses the request with a 400 naming the tool and the missing part — never runs unsandboxed', async () => {
    const client = new OpenAI({ baseURL: gw.baseURL, apiKey: 'test', maxRetries: 0, fetch: inProcessFetch(gw.gateway) });
    const err = await client.responses.create({ model: 'sim', input: 'hi', tools: TOOLS }).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(BadRequestError);
    expect((err as BadRequestError).param).toBe('tools[0]');
    expect((err as BadRequestError).code).toBe('code_interpreter_unavailable');
    expect((err as BadRequestError).message).toMatch(/nonexistent\/python3|bubblewrap/);
    expect((err as BadRequestError).message).toContain('apt-get install');
  });
});
