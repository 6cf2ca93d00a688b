/** Reads the catalogue configuration file and decodes it with core's schema; errors name the file. */
import { Effect, Schema } from "effect"
import { CatalogueConfig, validateCatalogue } from "@model-platform/core/CatalogueConfig"
import * as fs from "node:fs/promises"
import * as path from "node:path"
import { fileURLToPath } from "node:url"

/** The demo catalogue that ships with the server and is the default. */
export const DEMO_CATALOGUE = path.join(path.dirname(fileURLToPath(import.meta.url)), "..", "catalogue.demo.json")

export class CatalogueFileError extends Schema.TaggedError<CatalogueFileError>()("CatalogueFileError", {
  message: Schema.String
}) {}

export const loadCatalogue = Effect.fn("loadCatalogue")(function*(file: string) {
  const text = yield* Effect.tryPromise({
    try: () => fs.readFile(file, "utf8"),
    catch: (e) => new CatalogueFileError({ message: `cannot read catalogue file ${file}: ${String(e)}` })
  })
  const json = yield* Effect.try({
    try: () => JSON.parse(text) as unknown,
    catch: (e) => new CatalogueFileError({ message: `catalogue file ${file} is not valid JSON: ${String(e)}` })
  })
  const config = yield* Schema.decodeUnknownEffect(CatalogueConfig)(json, { onExcessProperty: "error" }).pipe(
    Effect.mapError((e) => new CatalogueFileError({ message: `catalogue file ${file} is invalid: ${e.message}` }))
  )
  const problems = validateCatalogue(config)
  if (problems.length > 0) {
    return yield* new CatalogueFileError({ message: `catalogue file ${file} is inconsistent: ${problems.join("; ")}` })
  }
  return config
})
