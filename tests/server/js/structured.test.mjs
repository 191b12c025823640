// Structured output through the real server: a random-weight model with the real Qwen3
// vocabulary (151,936 tokens; `hearth synth`, so no model could produce JSON on its own) must
// answer every response_format json_schema request, at temperature 1 over many seeds, with JSON
// that a real JSON Schema validator (ajv) accepts — streamed (assembled from the deltas) and not.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import Ajv from 'ajv';
import { startSynthQwen3 } from './serve.mjs';

const SEEDS = 20;
let client, base, stop;

before(async () => {
  ({ client, base, stop } =
    await startSynthQwen3(process.env.HEARTH_BIN, process.env.HEARTH_TEST_MODEL, 1024));
});

after(async () => {
  if (stop) await stop();
});

// Ten schemas over the keywords people use: nested objects, arrays with bounds, enums, consts,
// anyOf, $ref/$defs, patterns, formats, integer ranges, optional properties.
const SCHEMAS = {
  person: { type: 'object', additionalProperties: false, required: ['name', 'age'],
            properties: { name: { type: 'string', maxLength: 12 },
                          age: { type: 'integer', minimum: 0, maximum: 120 } } },
  flags: { type: 'object', additionalProperties: false, required: ['ok', 'note'],
           properties: { ok: { type: 'boolean' }, note: { type: ['string', 'null'], maxLength: 8 } } },
  list: { type: 'array', items: { type: 'integer', minimum: -5, maximum: 5 },
          minItems: 1, maxItems: 4 },
  color: { type: 'object', additionalProperties: false, required: ['color'],
           properties: { color: { enum: ['red', 'green', 'blue'] } } },
  version: { type: 'object', additionalProperties: false, required: ['v', 'kind'],
             properties: { v: { const: 2 }, kind: { type: 'string', pattern: '^[a-z]{2,5}$' } } },
  shape: { anyOf: [
    { type: 'object', additionalProperties: false, required: ['r'],
      properties: { r: { type: 'number', minimum: 0 } } },
    { type: 'object', additionalProperties: false, required: ['w', 'h'],
      properties: { w: { type: 'integer', minimum: 1, maximum: 9 },
                    h: { type: 'integer', minimum: 1, maximum: 9 } } }] },
  tree: { $defs: { node: { type: 'object', additionalProperties: false, required: ['id'],
                           properties: { id: { type: 'integer', minimum: 0, maximum: 99 },
                                         kids: { type: 'array', maxItems: 2,
                                                 items: { $ref: '#/$defs/node' } } } } },
          $ref: '#/$defs/node' },
  event: { type: 'object', additionalProperties: false, required: ['id', 'when'],
           properties: { id: { type: 'string', format: 'uuid' },
                         when: { type: 'string', format: 'date' } } },
  optional: { type: 'object', additionalProperties: false, required: ['a'],
              properties: { a: { type: 'integer', minimum: 10, maximum: 20 },
                            b: { type: 'string', maxLength: 4 },
                            c: { type: 'array', items: { type: 'boolean' }, maxItems: 2 } } },
  matrix: { type: 'array', minItems: 2, maxItems: 2,
            items: { type: 'array', minItems: 2, maxItems: 2, items: { type: 'number' } } },
};

const ajv = new Ajv({ strict: false });
const request = (name, seed) => ({
  model: 'any', max_tokens: 400, temperature: 1, seed,
  messages: [{ role: 'user', content: `Give me a ${name} as JSON.` }],
  response_format: { type: 'json_schema', json_schema: { name, schema: SCHEMAS[name] } },
});

const check = (name, seed, text, finish) => {
  assert.equal(finish, 'stop', `${name} seed ${seed}: finish ${finish}: ${text}`);
  let value;
  assert.doesNotThrow(() => { value = JSON.parse(text); }, `${name} seed ${seed}: ${text}`);
  const validate = ajv.compile(SCHEMAS[name]);
  assert.ok(validate(value), `${name} seed ${seed}: ${text}: ${ajv.errorsText(validate.errors)}`);
};

for (const name of Object.keys(SCHEMAS)) {
  test(`json_schema ${name}: ${SEEDS} seeds at temperature 1 validate, streamed and not`, async () => {
    for (let seed = 1; seed <= SEEDS; seed++) {
      const r = await client.chat.completions.create(request(name, seed));
      check(name, seed, r.choices[0].message.content, r.choices[0].finish_reason);
      const stream = await client.chat.completions.create({ ...request(name, seed), stream: true });
      let text = '', finish = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? '';
        finish = chunk.choices[0]?.finish_reason ?? finish;
      }
      check(name, seed, text, finish);
      assert.equal(text, r.choices[0].message.content, `${name} seed ${seed}: stream differs`);
    }
  });
}

// json_object bounds nothing inside the object, so a random model may run out of tokens inside
// a string: a reply that ends is an object; one cut by max_tokens says so.
test('json_object gives a JSON object; a bad schema is a 400 naming the field', async () => {
  let whole = 0;
  for (let seed = 1; seed <= 8; seed++) {
    const r = await client.chat.completions.create({
      model: 'any', max_tokens: 300, temperature: 1, seed,
      messages: [{ role: 'user', content: 'JSON please' }], response_format: { type: 'json_object' } });
    const { content } = r.choices[0].message;
    if (r.choices[0].finish_reason === 'length') continue;
    assert.equal(r.choices[0].finish_reason, 'stop');
    const v = JSON.parse(content);
    assert.ok(typeof v === 'object' && v !== null && !Array.isArray(v), content);
    whole++;
  }
  assert.ok(whole > 0, 'no json_object reply ended within 300 tokens');
  const bad = await fetch(`${base}/v1/chat/completions`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'x' }], response_format: {
      type: 'json_schema', json_schema: { name: 'b', schema: { type: 'integer', minimum: 'x' } } } }) });
  assert.equal(bad.status, 400);
  const e = (await bad.json()).error;
  assert.equal(e.param, 'response_format.json_schema.schema');
  assert.match(e.message, /minimum/);
});

test('/completion takes a GBNF grammar and llama-server\'s json_schema', async () => {
  const post = async (body) => (await fetch(`${base}/completion`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) })).json();
  const g = await post({ prompt: 'Answer:', n_predict: 20, temperature: 1, seed: 5,
                         grammar: 'root ::= ("yes" | "no") "!"' });
  assert.match(g.content, /^(yes|no)!$/);
  const s = await post({ prompt: 'Answer:', n_predict: 200, temperature: 1, seed: 6,
                         json_schema: SCHEMAS.person });
  assert.ok(ajv.validate(SCHEMAS.person, JSON.parse(s.content)), s.content);
});
