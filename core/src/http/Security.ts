/**
 * Platform key authentication for the HttpApi: the bearer middleware, the permission each
 * endpoint needs (an endpoint annotation), how a scoped key may use it (KeyScope.ts: refused here
 * when the endpoint is account-wide), and the CurrentCaller it provides to handlers.
 */
import { Clock, Context, Effect, Layer, Redacted } from "effect"
import { HttpServerResponse } from "effect/http"
import { HttpApiMiddleware, HttpApiSecurity } from "effect/http-api"
import { ApiKeys } from "../keys/ApiKeys.ts"
import { type Caller } from "../keys/Caller.ts"
import { makeStandingCheck } from "../gateway/KeyStanding.ts"
import * as Errors from "./Errors.ts"
import { requireAccountWide, ScopeRuleAnnotation, scopeRuleOf } from "../keys/KeyScope.ts"
import type { Permission } from "../keys/Permissions.ts"
import { answer, answered } from "./Refusals.ts"

export class CurrentCaller extends Context.Service<CurrentCaller, Caller>()(
  "@model-platform/core/http/CurrentCaller"
) {}

/** The permission an endpoint needs, set with `.annotate(RequiredPermission, "read")`. */
export const RequiredPermission = Context.Reference<Permission | undefined>(
  "@model-platform/core/http/RequiredPermission",
  { defaultValue: () => undefined }
)

export class Authentication extends HttpApiMiddleware.Service<Authentication, { provides: CurrentCaller }>()(
  "@model-platform/core/http/Authentication",
  { security: { bearer: HttpApiSecurity.bearer }, error: [Errors.Unauthorized, Errors.Forbidden] }
) {
  static readonly layer = Layer.effect(
    Authentication,
    Effect.gen(function*() {
      const apiKeys = answered(yield* ApiKeys)
      const standingOf = yield* makeStandingCheck
      return Authentication.of({
        bearer: Effect.fnUntraced(function*(httpEffect, { credential, endpoint }) {
          const caller = yield* apiKeys.authenticate(Redacted.value(credential).trim())
          // What stands behind the key, as on every surface (gateway/KeyStanding.ts).
          yield* answer(standingOf(caller.key, yield* Clock.currentTimeMillis))
          const needed = Context.get(endpoint.annotations, RequiredPermission)
          if (needed !== undefined && !caller.key.permissions.includes(needed)) {
            return yield* Errors.forbidden(
              "key_lacks_permission",
              `This key lacks the "${needed}" permission.`,
              needed
            )
          }
          if (scopeRuleOf(needed, Context.get(endpoint.annotations, ScopeRuleAnnotation)) === "account") {
            yield* answer(requireAccountWide(caller))
          }
          // An account's answer is for that account only: no cache between the client and the
          // platform may keep it and hand it to the next asker of the same address
          // (docs/api-decisions.md "Isolation between accounts").
          return yield* Effect.provideService(httpEffect, CurrentCaller, caller).pipe(
            Effect.map(HttpServerResponse.setHeader("cache-control", "no-store"))
          )
        })
      })
    })
  )
}
