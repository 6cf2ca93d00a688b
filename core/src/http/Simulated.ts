/**
 * The simulated chain's deposit endpoint (docs/payments.md "Sending a simulated deposit"): with the
 * catalogue's `payments.stablecoin.processor: "simulated"` there is no chain to watch, so the
 * operator puts a transfer "on the chain" here and the platform records it exactly as a chain
 * watcher would hand it over (`Orders.recordDeposit`): exact, short, excess, late, wrong-asset and
 * unmatched deposits all answer by the rules of a real rail.
 *
 *   POST /_simulated/deposits  {order_id | to, amount?, chain?, token?, at?, tx?}
 *
 * Only the owner account (the first one, made at first start) may send, with a key holding
 * `manage`: a simulated deposit pays a real order, so anyone able to send one could mint credits.
 * With any other rail the endpoint answers 404. It is a separate HttpApi so the public OpenAPI
 * document does not show it.
 */
import { Effect, Schema } from "effect"
import { HttpApi, HttpApiBuilder, HttpApiEndpoint, HttpApiGroup } from "effect/http-api"
import { Catalogue } from "../catalogue/Catalogue.ts"
import * as Errors from "./Errors.ts"
import { randomBytes } from "../kernel/Ids.ts"
import { MAX_SHORT_TEXT_LENGTH } from "../kernel/Limits.ts"
import { Orders } from "../payments/OrderService.ts"
import { answered } from "./Refusals.ts"
import { AccountStore } from "../keys/AccountStore.ts"
import type { Transfer } from "../payments/StablecoinRail.ts"
import { Text } from "../kernel/Text.ts"
import * as Time from "../kernel/Time.ts"
import { SchemaErrors } from "./ErrorShape.ts"
import { Authentication, CurrentCaller, RequiredPermission } from "./Security.ts"

export const SIMULATED_DEPOSITS_PATH = "/_simulated/deposits"

const Field = Text(1, MAX_SHORT_TEXT_LENGTH)

export const SimulatedDepositBody = Schema.Struct({
  /** Send to this order's deposit address, in its chain and token (the default amount: what remains). */
  order_id: Schema.optionalKey(Field),
  /** Or send to this address (amount required; chain and token too unless one option exists). */
  to: Schema.optionalKey(Field),
  /** Exact decimal in token units, e.g. "25" or "25.000000". */
  amount: Schema.optionalKey(Field),
  chain: Schema.optionalKey(Field),
  token: Schema.optionalKey(Field),
  /** Chain time of the transfer; now when absent (an earlier or later time simulates timing). */
  at: Schema.optionalKey(Time.Timestamp),
  /** Transaction id; a fresh one when absent. The same tx again is a replay and changes nothing. */
  tx: Schema.optionalKey(Field)
})
export type SimulatedDepositBody = typeof SimulatedDepositBody.Type

const DepositOutcome = Schema.Literals(["counted", "late", "wrong_asset", "unmatched"])

export const DepositSummary = Schema.Struct({
  order_id: Schema.String,
  status: Schema.String,
  address: Schema.String,
  chain: Schema.String,
  token: Schema.String,
  amount_due: Schema.String,
  received: Schema.String,
  remaining: Schema.String,
  refund_due: Schema.String,
  other_assets: Schema.Array(Schema.Struct({ chain: Schema.String, token: Schema.String, amount: Schema.String, tx: Schema.String })),
  deposits: Schema.Array(Schema.Struct({ tx: Schema.String, amount: Schema.String, outcome: DepositOutcome, at: Schema.String }))
})

export const SimulatedDepositResult = Schema.Struct({
  transfer: Schema.Struct({
    tx: Schema.String,
    chain: Schema.String,
    token: Schema.String,
    to: Schema.String,
    amount: Schema.String,
    at: Schema.String
  }),
  /** counted, late, wrong_asset or unmatched (for a replayed tx: as first recorded). */
  outcome: DepositOutcome,
  /** false when this tx had been recorded before: nothing changed. */
  recorded: Schema.Boolean,
  /** The order owning the address after the transfer, null for an address no order owns. */
  order: Schema.NullOr(DepositSummary)
})
export type SimulatedDepositResult = typeof SimulatedDepositResult.Type

export class SimulatedGroup extends HttpApiGroup.make("simulated")
  .add(
    HttpApiEndpoint.post("deposit", SIMULATED_DEPOSITS_PATH, {
      payload: SimulatedDepositBody,
      success: SimulatedDepositResult,
      error: [Errors.BadRequest, Errors.Forbidden, Errors.NotFound]
    }).annotate(RequiredPermission, "manage")
  )
  .middleware(Authentication)
{}

export class SimulatedApi extends HttpApi.make("simulated").add(SimulatedGroup).middleware(SchemaErrors) {}

const randomTx = Effect.map(randomBytes(32), (bytes) => "0x" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join(""))

const isZero = (amount: string) => /^0*(\.0*)?$/.test(amount)

export const SimulatedHandlers = HttpApiBuilder.group(SimulatedApi, "simulated", Effect.fnUntraced(function*(handlers) {
  const orders = answered(yield* Orders)
  const accounts = yield* AccountStore
  const stablecoin = (yield* Catalogue).config.payments.stablecoin

  const deposit = Effect.fn("Simulated.deposit")(function*(body: SimulatedDepositBody) {
    if (stablecoin === null || stablecoin.processor !== "simulated") {
      return yield* Errors.notFound(
        "simulated_chain_off",
        "There is no simulated chain: the catalogue's payments.stablecoin.processor is not \"simulated\"."
      )
    }
    const caller = yield* CurrentCaller
    const owner = yield* accounts.first
    if (owner === undefined || owner.id !== caller.account.id) {
      return yield* Errors.forbidden("owner_only", "Only the owner account may send simulated deposits.")
    }
    if ((body.order_id === undefined) === (body.to === undefined)) {
      return yield* Errors.badRequest("invalid_request", "Give either order_id (send to its deposit address) or to (an address).")
    }
    let to: string
    let chain = body.chain
    let token = body.token
    let amount = body.amount
    if (body.order_id !== undefined) {
      const summary = yield* orders.deposits(body.order_id)
      to = summary.address
      chain ??= summary.chain
      token ??= summary.token
      amount ??= isZero(summary.remaining) ? summary.amount_due : summary.remaining
    } else {
      to = body.to!
      const only = stablecoin.options.length === 1 ? stablecoin.options[0] : undefined
      chain ??= only?.chain
      token ??= only?.token
      if (chain === undefined || token === undefined) {
        return yield* Errors.badRequest("invalid_request", "chain and token are required: the rail has several options.")
      }
      if (amount === undefined) return yield* Errors.badRequest("invalid_request", "amount is required with to.")
    }
    const transfer: Transfer = {
      tx: body.tx ?? (yield* randomTx),
      chain,
      token,
      to,
      amount,
      at: body.at ?? (yield* Time.now)
    }
    const result = yield* orders.recordDeposit(transfer)
    return { transfer, ...result } satisfies SimulatedDepositResult
  })

  return handlers.handle("deposit", ({ payload }) => deposit(payload))
}))
