/** Reads the catalogue configuration file; core's parseCatalogue decides what is valid. */
import { Effect, Schema } from "effect"
import { parseCatalogue } from "@model-platform/core/catalogue"
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
  return yield* parseCatalogue(text).pipe(
    Effect.mapError((e) => new CatalogueFileError({ message: `catalogue file ${file} is invalid: ${e.message}` }))
  )
})
