// Compile JSON schemas with ajv the way strict clients do; print what ajv said of each.
// stdin: [{"name": ..., "schema": {...}}, ...]; stdout: [{"name", "config", "said": [...]}, ...]
// Configurations:
//   strict       every strict-mode check on, union types refused (throws on a violation)
//   strict-2020  the same with ajv's draft 2020-12 class
//   gemini       how Gemini CLI builds its validators (google-gemini/gemini-cli,
//   gemini-2020  packages/core/src/utils/schemaValidator.ts): `strictSchema: false`, every
//                other strict option at ajv's default (strictTypes "log": a union type is a
//                logged warning), ajv-formats added; the draft-07 class by default, Ajv2020
//                for a schema whose $schema is draft 2020-12.
// The versions pinned in package.json are those gemini-cli's packages/core/package.json pins
// (ajv 8.17.1, ajv-formats 3.0.1; read at gemini-cli commit 5411f113).
"use strict";
const Ajv = require("ajv").default;
const Ajv2020 = require("ajv/dist/2020").default;
const addFormats = require("ajv-formats").default;

const STRICT = {
  strict: true,
  strictTypes: true,
  strictTuples: true,
  strictRequired: true,
  allowUnionTypes: false,
};
const GEMINI = { strictSchema: false };

function validator(Class, options, said) {
  const keep = (...parts) => said.push(parts.map(String).join(" "));
  const ajv = new Class({ ...options, logger: { log: keep, warn: keep, error: keep } });
  addFormats(ajv);
  return ajv;
}

const CONFIGS = {
  strict: [Ajv, STRICT],
  "strict-2020": [Ajv2020, STRICT],
  gemini: [Ajv, GEMINI],
  "gemini-2020": [Ajv2020, GEMINI],
};

const schemas = JSON.parse(require("fs").readFileSync(0, "utf8"));
const out = [];
for (const { name, schema } of schemas) {
  for (const [config, [Class, options]] of Object.entries(CONFIGS)) {
    const said = [];
    try {
      validator(Class, options, said).compile(schema);
    } catch (error) {
      said.push(`error: ${error.message}`);
    }
    out.push({ name, config, said });
  }
}
process.stdout.write(JSON.stringify(out));
