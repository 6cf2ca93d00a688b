/**
 * The probes (docs/operations.md "Probes"), keyless, on every shell:
 * - GET /health/live: 200 while the process can answer at all;
 * - GET /health/ready: 200 when the store answers (a read within READY_STORE_TIMEOUT_MS) and the
 *   platform is not draining; else 503 in the platform's error shape, its message saying why
 *   (`draining`, `store_unavailable`). Migrations run before a shell starts listening, so a shell
 *   that answers at all has run them.
 *
 * `Lifecycle` holds whether the platform is draining: a shell that shuts down gracefully (the Node
 * server on SIGTERM, adapters/node-http Shutdown.ts) says so first, so that load balancers stop
 * sending it new requests while it finishes the ones it has.
 */
import { Cause, Context, Effect, Exit, Layer, Metric, Ref } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { errorResponse } from "../ErrorShape.ts"
import { AccountStore } from "../../keys/AccountStore.ts"
import { isStoreUnavailableCause } from "../../kernel/StoreUnavailable.ts"
import { storeUnavailable } from "../../observability/Metrics.ts"

export const LIVE_PATH = "/health/live"
export const READY_PATH = "/health/ready"

/** The store has this long to answer the readiness read. */
export const READY_STORE_TIMEOUT_MS = 2_000

/** An account id no account has (ids are `acct_` and 22 characters): the read finds nothing, cheaply. */
const PROBE_ACCOUNT_ID = "acct_readiness-probe"

export class Lifecycle extends Context.Service<Lifecycle, {
  /** Why the platform is draining, or undefined while it serves normally. */
  readonly draining: Effect.Effect<string | undefined>
  /** From now on readiness answers 503 `draining` with this reason. */
  readonly drain: (reason: string) => Effect.Effect<void>
}>()("@model-platform/core/observability/Lifecycle") {
  static readonly layer = Layer.effect(
    Lifecycle,
    Effect.map(Ref.make<string | undefined>(undefined), (reason) =>
      Lifecycle.of({
        draining: Ref.get(reason),
        drain: (why) => Ref.update(reason, (current) => current ?? why)
      }))
  )
}

const live = Effect.succeed(HttpServerResponse.jsonUnsafe({ status: "live" }))

/** Why the platform is not ready now, or undefined when it is. */
export const notReady: Effect.Effect<
  { readonly code: "draining" | "store_unavailable"; readonly message: string } | undefined,
  never,
  Lifecycle | AccountStore
> = Effect.gen(function*() {
  const draining = yield* (yield* Lifecycle).draining
  if (draining !== undefined) {
    return { code: "draining", message: `The platform is shutting down (${draining}); send new requests to another instance.` } as const
  }
  const read = yield* (yield* AccountStore).get(PROBE_ACCOUNT_ID).pipe(
    Effect.timeoutOption(READY_STORE_TIMEOUT_MS),
    Effect.exit
  )
  if (Exit.isSuccess(read) && read.value._tag === "Some") return undefined
  // What failed goes to the log (it may name hosts); the body says what an operator acts on.
  const detail = Exit.isSuccess(read)
    ? `the store did not answer within ${READY_STORE_TIMEOUT_MS} ms`
    : isStoreUnavailableCause(read.cause)
    ? "the store cannot be reached"
    : "the store failed to answer"
  yield* Metric.update(Metric.withAttributes(storeUnavailable, { store: "readiness" }), 1)
  yield* Exit.isFailure(read)
    ? Effect.logWarning(`not ready: ${detail}`, Cause.squash(read.cause))
    : Effect.logWarning(`not ready: ${detail}`)
  return { code: "store_unavailable", message: `The platform is not ready: ${detail}.` } as const
})

const ready = Effect.map(notReady, (problem) =>
  problem === undefined
    ? HttpServerResponse.jsonUnsafe({ status: "ready" })
    : errorResponse(READY_PATH, 503, problem.message, problem.code))

/** GET /health/live and GET /health/ready; need Lifecycle and AccountStore. */
export const HealthRoutes = Layer.mergeAll(
  HttpRouter.add("GET", LIVE_PATH, live),
  HttpRouter.add("GET", READY_PATH, ready)
)
