/**
 * Attribute values of the low-level DynamoDB API, shared by the stores that write items by hand
 * (ledger, orders, usage): written with the small constructors, read back with schemas, so
 * amounts travel as exact decimal strings (`N`) and never pass through a JS number.
 */
import type { AttributeValue } from "@aws-sdk/client-dynamodb"
import { Timestamp } from "@model-platform/core/kernel"
import { Clock, Effect, Schema, SchemaTransformation } from "effect"
import type { ItemKey } from "./DynamoTable.ts"

export type Item = Record<string, AttributeValue>

export const str = (value: string): AttributeValue => ({ S: value })
export const num = (value: bigint | number): AttributeValue => ({ N: value.toString() })
export const bool = (value: boolean): AttributeValue => ({ BOOL: value })
export const keyOf = (key: ItemKey): Item => ({ pk: str(key.pk), sk: str(key.sk) })
/** Optional fields are absent attributes, never NULL. */
export const optionalStr = (name: string, value: string | null): Item => (value === null ? {} : { [name]: str(value) })

export const StringAttr = Schema.Struct({ S: Schema.String }).pipe(
  Schema.decodeTo(Schema.String, SchemaTransformation.transform({ decode: (a) => a.S, encode: (S) => ({ S }) }))
)
export const TimestampAttr = Schema.Struct({ S: Timestamp }).pipe(
  Schema.decodeTo(Timestamp, SchemaTransformation.transform({ decode: (a) => a.S, encode: (S) => ({ S }) }))
)
/** A DynamoDB number holding an integer (an amount: micro-credits, cents, base units), as a bigint. */
export const BigIntAttr = Schema.Struct({ N: Schema.String }).pipe(
  Schema.decodeTo(Schema.BigIntFromString, SchemaTransformation.transform({ decode: (a) => a.N, encode: (N) => ({ N }) }))
)
export const IntAttr = Schema.Struct({ N: Schema.String }).pipe(
  Schema.decodeTo(Schema.NumberFromString, SchemaTransformation.transform({ decode: (a) => a.N, encode: (N) => ({ N }) }))
)
export const BoolAttr = Schema.Struct({ BOOL: Schema.Boolean }).pipe(
  Schema.decodeTo(Schema.Boolean, SchemaTransformation.transform({ decode: (a) => a.BOOL, encode: (BOOL) => ({ BOOL }) }))
)
export const literalAttr = <const L extends ReadonlyArray<string>>(literals: L) => {
  const values = Schema.Literals(literals)
  return Schema.Struct({ S: values }).pipe(
    Schema.decodeTo(values, SchemaTransformation.transform({ decode: (a) => a.S, encode: (S) => ({ S }) }))
  )
}

/** Items are decoded with a schema: a malformed item is a defect, never a silent partial record. */
export const decode = <S extends Schema.Constraint>(schema: S) => {
  const decodeItem = Schema.decodeUnknownEffect(schema)
  return (item: unknown) => Effect.orDie(decodeItem(item))
}

/**
 * A write stamp for sort keys: microseconds since the epoch, 17 digits, strictly increasing within
 * one maker, so items of one timestamp list in insertion order. One maker per store instance.
 */
export const makeWriteStamp = (): Effect.Effect<string> => {
  let lastStamp = 0n
  return Effect.map(Clock.currentTimeNanos, (nanos) => {
    const micros = nanos / 1000n
    lastStamp = micros > lastStamp ? micros : lastStamp + 1n
    return lastStamp.toString().padStart(17, "0")
  })
}
