// Tool calls through the real server and the official openai client: a random-weight model with
// the real Qwen3 vocabulary and chat template (`hearth synth`; it cannot call a tool on its own)
// must answer tool_choice "required" and a named function with calls whose arguments validate
// against the function's parameters (ajv), answered whole and streamed (assembled by the
// client's stream helper); the follow-up turn with the tool's result reuses the whole first
// turn from the prefix cache.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import { startSynthQwen3 } from './serve.mjs';

const SEEDS = 8;
let client, stop;

before(async () => {
  ({ client, stop } =
    await startSynthQwen3(process.env.HEARTH_BIN, process.env.HEARTH_TEST_MODEL, 2048));
});

after(async () => {
  if (stop) await stop();
});

const TOOLS = [
  { type: 'function', function: {
    name: 'get_weather', description: 'The weather in a city',
    parameters: { type: 'object', additionalProperties: false, required: ['city', 'days'],
                  properties: { city: { type: 'string', maxLength: 12 },
                                days: { type: 'integer', minimum: 1, maximum: 7 },
                                unit: { enum: ['c', 'f'] } } } } },
  { type: 'function', function: {
    name: 'add_event', description: 'Put an event in the calendar',
    parameters: { type: 'object', additionalProperties: false, required: ['title', 'when'],
                  properties: { title: { type: 'string', maxLength: 16 },
                                when: { type: 'string', format: 'date' },
                                guests: { type: 'array', maxItems: 3,
                                          items: { type: 'string', maxLength: 8 } } } } } },
];
const ajv = new Ajv({ strict: false });
const validators = Object.fromEntries(TOOLS.map((t) => [t.function.name,
  ajv.compile(t.function.parameters)]));
const MESSAGES = [{ role: 'system', content: 'You can call tools.' },
                  { role: 'user', content: 'What is the weather in Paris for 3 days?' }];

function checkCalls(message, only, where) {
  assert.ok(Array.isArray(message.tool_calls) && message.tool_calls.length >= 1,
            `${where}: no tool_calls in ${JSON.stringify(message)}`);
  for (const call of message.tool_calls) {
    assert.equal(call.type, 'function', where);
    assert.match(call.id, /^call_[A-Za-z0-9]{24}$/, where);
    if (only) assert.equal(call.function.name, only, where);
    const validate = validators[call.function.name];
    assert.ok(validate, `${where}: unknown function ${call.function.name}`);
    const args = JSON.parse(call.function.arguments);
    assert.ok(validate(args), `${where}: ${call.function.arguments}: ` +
              JSON.stringify(validate.errors));
  }
}

function request(seed, tool_choice, extra = {}) {
  return { model: 'm', messages: MESSAGES, tools: TOOLS, tool_choice, temperature: 1, seed,
           max_tokens: 400, ...extra };
}

test('tool_choice required: calls that validate, answered whole', async () => {
  for (let seed = 1; seed <= SEEDS; seed++) {
    const r = await client.chat.completions.create(
      request(seed, 'required', { parallel_tool_calls: false }));
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', `seed ${seed}`);
    assert.equal(choice.message.content, null, `seed ${seed}`);
    checkCalls(choice.message, null, `seed ${seed}`);
  }
});

test('parallel calls: each one validates', async () => {
  // A random model may go on adding calls until max_tokens; every completed one must validate.
  let calls = 0;
  for (let seed = 1; seed <= SEEDS; seed++) {
    const r = await client.chat.completions.create(request(seed, 'required', { max_tokens: 300 }));
    assert.ok(['tool_calls', 'length'].includes(r.choices[0].finish_reason), `seed ${seed}`);
    checkCalls(r.choices[0].message, null, `seed ${seed}`);
    calls += r.choices[0].message.tool_calls.length;
  }
  assert.ok(calls > SEEDS, `parallel calls were made (${calls} in ${SEEDS} replies)`);
});

test('a named function, streamed and assembled by the client', async () => {
  const named = { type: 'function', function: { name: 'add_event' } };
  for (let seed = 1; seed <= SEEDS; seed++) {
    const stream = client.beta.chat.completions.stream(
      request(seed, named, { parallel_tool_calls: false }));
    const r = await stream.finalChatCompletion();
    const choice = r.choices[0];
    assert.equal(choice.finish_reason, 'tool_calls', `seed ${seed}`);
    checkCalls(choice.message, 'add_event', `seed ${seed}`);
    assert.equal(choice.message.tool_calls.length, 1, `seed ${seed}: parallel_tool_calls false`);
  }
});

test('streamed and whole replies give the same calls', async () => {
  const one = { parallel_tool_calls: false };
  const whole = await client.chat.completions.create(request(5, 'required', one));
  const stream = client.beta.chat.completions.stream(request(5, 'required', one));
  const streamed = await stream.finalChatCompletion();
  const strip = (m) => m.tool_calls.map((c) => [c.function.name, c.function.arguments]);
  assert.deepEqual(strip(streamed.choices[0].message), strip(whole.choices[0].message));
});

test('the follow-up turn with the tool result reuses the first turn from the cache', async () => {
  const first = await client.chat.completions.create(
    request(7, 'required', { parallel_tool_calls: false }));
  const assistant = first.choices[0].message;
  checkCalls(assistant, null, 'first turn');
  const messages = [...MESSAGES, assistant,
    ...assistant.tool_calls.map((c) => ({ role: 'tool', tool_call_id: c.id,
                                           content: '{"temp_c": 21, "sky": "clear"}' }))];
  const r = await client.chat.completions.create(
    { model: 'm', messages, tools: TOOLS, temperature: 0, max_tokens: 8 });
  const reused = r.timings.cache_n;
  const firstTurn = first.usage.prompt_tokens + first.usage.completion_tokens;
  // The prompt repeats the first turn's prompt and reply byte for byte (the forcing grammar
  // writes arguments as the template's tojson renders them back), so all of the first turn is
  // reused but at most its end-of-turn token.
  assert.ok(reused >= firstTurn - 1,
            `cache_n ${reused}, first turn ${first.usage.prompt_tokens} + ` +
            `${first.usage.completion_tokens}`);
  assert.ok(r.usage.prompt_tokens > firstTurn, 'the tool result is in the prompt');
});

test('tool_choice none and auto leave a reply without calls as content', async () => {
  const none = await client.chat.completions.create(request(2, 'none', { max_tokens: 12 }));
  assert.equal(none.choices[0].message.tool_calls, undefined);
  assert.equal(typeof none.choices[0].message.content, 'string');
  assert.notEqual(none.choices[0].finish_reason, 'tool_calls');
  const auto = await client.chat.completions.create(request(2, 'auto', { max_tokens: 12 }));
  assert.equal(typeof auto.choices[0].message.content, 'string');
});

test('bad tool requests are 400s that name the parameter', async () => {
  const bad = async (body, param) => {
    await assert.rejects(client.chat.completions.create(body), (e) => {
      assert.equal(e.status, 400);
      assert.equal(e.param, param, e.message);
      return true;
    });
  };
  await bad(request(1, { type: 'function', function: { name: 'nope' } }),
            'tool_choice.function.name');
  await bad(request(1, 'required', { response_format: { type: 'json_object' } }), 'tool_choice');
  await bad({ ...request(1, 'required'), tools: [{ type: 'function', function: {
    name: 'f', parameters: { type: 'object', properties: { x: { $ref: '#/nowhere' } } } } }] },
  'tools');
});
