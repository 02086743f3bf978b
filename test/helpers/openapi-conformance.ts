// Checks a live HTTP response against the OpenAPI document: the status is declared for the
// operation, the media type is the declared one, every declared header is present, and the
// body validates against the declared schema. For validation every object schema is closed
// (`additionalProperties: false`), so a field the server sends but the document does not
// declare is a failure too, even though the published schema leaves objects open.
import { Ajv, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';
import type { JsonSchema, OpenApiDocument, OpenApiResponse } from '../../gateway/api/openapi.js';

/** Declared headers sent only on some answers: CORS headers go to listed origins only. */
const CONDITIONAL_HEADERS = new Set(['Access-Control-Allow-Origin']);

// ajv-formats is CommonJS with `export default`; under NodeNext the callable is on .default.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv,
) => Ajv;

export interface ObservedResponse {
  /** The path template of the operation, e.g. `/api/v1/emails/{id}`. */
  template: string;
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

const INT32 = 2 ** 31;

function closeObjects(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(closeObjects);
  if (!node || typeof node !== 'object') return node;
  const out: JsonSchema = {};
  for (const [k, v] of Object.entries(node as JsonSchema)) {
    out[k] =
      k === 'properties'
        ? Object.fromEntries(Object.entries(v as JsonSchema).map(([f, s]) => [f, closeObjects(s)]))
        : closeObjects(v);
  }
  if (out.type === 'object' && out.properties && out.additionalProperties === undefined)
    out.additionalProperties = false;
  return out;
}

export class OpenApiConformance {
  readonly #ajv: Ajv;
  readonly #doc: OpenApiDocument;
  readonly #validators = new Map<string, ValidateFunction>();
  static readonly ROOT = 'https://mail-archive.invalid/openapi/v1';

  constructor(doc: OpenApiDocument) {
    this.#doc = doc;
    this.#ajv = new Ajv({ allErrors: true, strict: true });
    addFormats(this.#ajv);
    this.#ajv.addFormat('int32', {
      type: 'number',
      validate: (n: number) => Number.isInteger(n) && n >= -INT32 && n < INT32,
    });
    this.#ajv.addFormat('int64', { type: 'number', validate: (n: number) => Number.isSafeInteger(n) });
    // The components are registered under one root so `#/components/schemas/X` refs resolve
    // exactly as they do inside the document.
    this.#ajv.addVocabulary(['components', 'schemas']);
    this.#ajv.addSchema({
      $id: OpenApiConformance.ROOT,
      components: { schemas: closeObjects(structuredClone(doc.components.schemas)) },
    });
  }

  /** The response object the document declares for this operation and status, $ref resolved. */
  declared(template: string, status: number): OpenApiResponse | undefined {
    const op = this.#doc.paths[template]?.get;
    if (!op) throw new Error(`no GET operation ${template} in the document`);
    let res = op.responses[String(status)];
    if (res && '$ref' in res) {
      const name = res.$ref.replace('#/components/responses/', '');
      res = this.#doc.components.responses[name];
    }
    return res as OpenApiResponse | undefined;
  }

  #validator(schema: JsonSchema): ValidateFunction {
    const key = JSON.stringify(schema);
    let v = this.#validators.get(key);
    if (!v) {
      // Refs inside an operation's schema point into the components of the root.
      const rooted = JSON.parse(
        key.replaceAll('"#/components/', `"${OpenApiConformance.ROOT}#/components/`),
      ) as JsonSchema;
      v = this.#ajv.compile(closeObjects(rooted) as JsonSchema);
      this.#validators.set(key, v);
    }
    return v;
  }

  /** Every way the response departs from the document; empty when it conforms. */
  problems(observed: ObservedResponse): string[] {
    const where = `${observed.template} ${observed.status}`;
    const declared = this.declared(observed.template, observed.status);
    if (!declared) return [`${where}: status not declared in the document`];
    const out: string[] = [];
    for (const name of Object.keys(declared.headers ?? {})) {
      if (CONDITIONAL_HEADERS.has(name)) continue;
      if (observed.headers[name.toLowerCase()] === undefined) out.push(`${where}: declared header ${name} missing`);
    }
    const contentType = (observed.headers['content-type'] ?? '').split(';')[0]!.trim();
    const media = declared.content ? Object.keys(declared.content) : [];
    if (media.length === 0) return out; // no body declared (the attachment download)
    if (!media.includes(contentType)) {
      out.push(`${where}: content type ${contentType || '(none)'} is not one of ${media.join(', ')}`);
      return out;
    }
    const validate = this.#validator(declared.content![contentType]!.schema);
    if (!validate(observed.body)) {
      for (const e of validate.errors ?? [])
        out.push(`${where}: body${e.instancePath} ${e.message} ${JSON.stringify(e.params)}`);
    }
    return out;
  }
}

export function headersOf(response: Response): Record<string, string> {
  const out: Record<string, string> = {};
  response.headers.forEach((value, name) => {
    out[name.toLowerCase()] = value;
  });
  return out;
}
