/**
 * The agents' routes in the management contract (added to PlatformApi in http/Api.ts): GET /agents
 * and GET /agents/{id} (read), POST /agents, POST /agents/{id}/settings, /keys and /revoke
 * (manage); the same again under /api (the spec: "The guide shows the same operations at
 * {platform_url}/api/..."), same payloads. Their handlers are AgentsHandlers.ts; the use-cases
 * agents/Agents.ts.
 */
import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "effect/http-api"
import * as Errors from "./Errors.ts"
import { CreatedKey } from "../keys/Keys.ts"
import { MAX_ID_LENGTH } from "../kernel/Limits.ts"
import { Text } from "../kernel/Text.ts"
import { Idempotency } from "./Idempotency.ts"
import { Authentication, RequiredPermission } from "./Security.ts"
import { Agent, AgentList, AgentProposalResponse, AgentSettings, CreateAgent, CreateAgentKey } from "../agents/Schemas.ts"

const params = { id: Text(1, MAX_ID_LENGTH) }

/** The agents' endpoints, in a group named `name` (its endpoints are `<name>.<endpoint>` in the OpenAPI document). */
const agentsGroup = <const Name extends string>(name: Name) =>
  HttpApiGroup.make(name).add(
    HttpApiEndpoint.get("list", "/agents", { success: AgentList }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.post("propose", "/agents", {
      payload: CreateAgent,
      success: AgentProposalResponse,
      error: [Errors.BadRequest, Errors.Conflict, Errors.ServiceUnavailable]
    })
      .annotate(RequiredPermission, "manage")
      .middleware(Idempotency),
    HttpApiEndpoint.get("get", "/agents/:id", {
      params,
      success: Agent,
      error: Errors.NotFound
    }).annotate(RequiredPermission, "read"),
    HttpApiEndpoint.post("settings", "/agents/:id/settings", {
      params,
      payload: AgentSettings,
      success: AgentProposalResponse,
      error: [Errors.BadRequest, Errors.NotFound, Errors.Conflict, Errors.ServiceUnavailable]
    })
      .annotate(RequiredPermission, "manage")
      .middleware(Idempotency),
    HttpApiEndpoint.post("keys", "/agents/:id/keys", {
      params,
      payload: CreateAgentKey,
      success: CreatedKey,
      error: [Errors.BadRequest, Errors.Forbidden, Errors.NotFound, Errors.Conflict]
    })
      .annotate(RequiredPermission, "manage")
      .middleware(Idempotency),
    HttpApiEndpoint.post("revoke", "/agents/:id/revoke", {
      params,
      success: AgentProposalResponse,
      error: [Errors.BadRequest, Errors.NotFound, Errors.Conflict, Errors.ServiceUnavailable]
    })
      .annotate(RequiredPermission, "manage")
      .middleware(Idempotency)
  )

const description =
  "Agents: sub-identities the owner delegates spending to. A proposal, a change of settings and a revocation each take effect only once the owner approves them with a passkey at approve_url; reading an agent collects an approval waiting."

export class AgentsGroup extends agentsGroup("agents")
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Agents", description }))
{}

/** The same operations at {platform_url}/api/... (the guide's addresses). */
export class AgentsApiGroup extends agentsGroup("agentsApi")
  .prefix("/api")
  .middleware(Authentication)
  .annotateMerge(OpenApi.annotations({ title: "Agents (under /api)", description: `${description} The same operations as /agents.` }))
{}
