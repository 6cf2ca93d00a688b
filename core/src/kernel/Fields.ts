/** Field schemas the areas' bodies share: an id, an integer with a floor. */
import { Schema } from "effect"
import { MAX_ID_LENGTH } from "./Limits.ts"
import { Text } from "./Text.ts"

/** An id a client names (an order, a machine, a plan): client text of 1 to MAX_ID_LENGTH characters. */
export const Id = Text(1, MAX_ID_LENGTH)

export const IntAtLeast = (minimum: number) =>
  Schema.Int.check(Schema.isGreaterThanOrEqualTo(minimum, { expected: `an integer of at least ${minimum}` }))
