/**
 * The shape of an area's refusals (docs/architecture.md "Errors"): a tagged error whose `reason`
 * names the refusal among a fixed list a caller can tell apart, with a message for a person.
 * Nothing here is HTTP: http/Refusals.ts maps each (tag, reason) to the spec's status and code.
 *
 *   export class OrderError extends Schema.TaggedError<OrderError>()("OrderError", refusalFields(OrderErrorReasons)) {
 *     static readonly reasons = OrderErrorReasons
 *   }
 *
 * The class keeps its `reasons` (static), so the mapping's test finds every area refusal and
 * checks that each reason has a status.
 */
import { Schema } from "effect"

/** The fields of a refusal: `reason`, one of `reasons`, and `message`. */
export const refusalFields = <const Reasons extends ReadonlyArray<string>>(reasons: Reasons) => ({
  reason: Schema.Literals(reasons),
  message: Schema.String
})

/** A refusal of one of the given reasons: a service's signature says which each call can give. */
export type RefusalOf<E extends { readonly reason: string }, R extends E["reason"]> = E & { readonly reason: R }
