/**
 * GET /.well-known/jwks.json: the public keys the platform signs its service assertions with
 * (agents/ServiceAssertions.ts; docs/agents.md "Service assertions"), for the services it calls.
 * No authentication (public keys only); cached a few minutes, so a rotated key is seen soon.
 * No signing key: an empty set.
 */
import { Effect } from "effect"
import { HttpRouter, HttpServerResponse } from "effect/http"
import { PublishedJwks } from "../agents/ServiceAssertions.ts"

export const JWKS_PATH = "/.well-known/jwks.json"

export const JwksRoute = HttpRouter.add(
  "GET",
  JWKS_PATH,
  Effect.map(PublishedJwks, (jwks) =>
    HttpServerResponse.jsonUnsafe(jwks, { headers: { "cache-control": "public, max-age=300" } }))
)
