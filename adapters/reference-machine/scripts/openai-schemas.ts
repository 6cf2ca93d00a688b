/**
 * Writes test/openai-schemas.json: the component schemas of OpenAI's OpenAPI document (MIT
 * licensed) that the tests validate answers against (openaiSchema.ts), with every schema they
 * refer to, so the tests need nothing outside the repository.
 *
 *   ./platform node adapters/reference-machine/scripts/openai-schemas.ts <openai-openapi.json>
 */
import { readFileSync, writeFileSync } from "node:fs"
import * as path from "node:path"

/** The components the tests name. */
const ROOTS = [
  "CreateChatCompletionResponse",
  "CreateChatCompletionStreamResponse",
  "CreateEmbeddingResponse",
  "ErrorResponse",
  "ImagesResponse",
  "ListModelsResponse",
  "Model"
]

const source = process.argv[2]
if (source === undefined) throw new Error("usage: openai-schemas.ts <path of OpenAI's openapi.json>")
const doc = JSON.parse(readFileSync(source, "utf8")) as {
  readonly openapi: string
  readonly info: { readonly title: string; readonly version: string; readonly license?: unknown }
  readonly components: { readonly schemas: Record<string, unknown> }
}
const all = doc.components.schemas

/** The names of the schemas `node` refers to ($ref "#/components/schemas/<name>"). */
const refsOf = (node: unknown, into: Array<string>): Array<string> => {
  if (Array.isArray(node)) node.forEach((item) => refsOf(item, into))
  else if (node !== null && typeof node === "object") {
    for (const [key, value] of Object.entries(node)) {
      const ref = key === "$ref" && typeof value === "string" ? /^#\/components\/schemas\/(.+)$/.exec(value) : null
      if (ref !== null) into.push(ref[1]!)
      else refsOf(value, into)
    }
  }
  return into
}

const kept = new Set<string>()
const pending = [...ROOTS]
while (pending.length > 0) {
  const name = pending.pop()!
  if (kept.has(name)) continue
  if (all[name] === undefined) throw new Error(`no component schema ${name} in ${source}`)
  kept.add(name)
  pending.push(...refsOf(all[name], []))
}

const out = {
  openapi: doc.openapi,
  info: { title: doc.info.title, version: doc.info.version, license: doc.info.license },
  "x-kept": `the component schemas ${ROOTS.join(", ")} and those they refer to, by scripts/openai-schemas.ts`,
  components: { schemas: Object.fromEntries([...kept].sort().map((name) => [name, all[name]])) }
}
const target = path.join(import.meta.dirname, "..", "test", "openai-schemas.json")
writeFileSync(target, `${JSON.stringify(out, null, 1)}\n`)
console.log(`wrote ${kept.size} schemas of ${doc.info.title} ${doc.info.version} to ${path.relative(process.cwd(), target)}`)
