/**
 * The keys the permission matrix tries beside the owner's (PermissionMatrix.ts): keys scoped to a
 * machine, a plan and a rental (every permission), keys of a plan and a rental that have ended,
 * and keys of agents in each state — plus things beyond every scoped key's reach for the `within`
 * endpoints (KeyScope.ts): a plan on another machine. Written on the shell's own stores (`seed`),
 * in the owner's account, with the fixture catalogue's machines (Fixtures.ts).
 */
import { ApiKeys, type Permission, PermissionValues } from "@model-platform/core/keys"
import { generateId, Time } from "@model-platform/core/kernel"
import type { AgentRecord } from "@model-platform/core/agents"
import { AgentStore } from "@model-platform/core/agents"
import { PlanStore } from "@model-platform/core/plans"
import { Effect } from "effect"
import { makeAgent } from "@model-platform/contract-kit/AgentContract"

/** The machine a machine-scoped key is pinned to, the one with plans, the one with rentals. */
export const PINNED_MACHINE = "m-eu-a"
export const PLAN_MACHINE = "m-eu-c"
export const RENTAL_MACHINE = "m-us-b"

export const SCOPE_KINDS = ["machine", "plan", "rental"] as const
export type ScopeKind = (typeof SCOPE_KINDS)[number]

/** Agents' states as their keys meet them, and what every key endpoint answers them. */
export const AGENT_STATES = {
  revoked: { status: 401, code: "invalid_api_key" },
  failed: { status: 401, code: "invalid_api_key" },
  expired: { status: 403, code: "agent_expired" },
  /** Still active, but its delegation's end has passed. */
  lapsed: { status: 403, code: "agent_expired" }
} as const
export type AgentState = keyof typeof AGENT_STATES | "active"

export interface KeyWorld {
  /** Secrets of keys holding every permission, scoped to a machine, a running plan, a running rental. */
  readonly scoped: Record<ScopeKind, string>
  /** Secrets of keys (every permission) of a plan and a rental that have ended. */
  readonly ended: { readonly plan: string; readonly rental: string }
  /** Secrets of agent keys holding every permission an agent key may hold (all but manage). */
  readonly agents: Record<AgentState, string>
  /** A plan of the account no scoped key reaches (another plan, on another machine than the pin). */
  readonly foreignPlan: string
}

const DAY = 86_400_000
/** Every permission an agent key may hold (docs/agents.md: never manage). */
export const AGENT_PERMISSIONS: ReadonlyArray<Permission> = PermissionValues.filter((p) => p !== "manage")

export const seedKeyWorld = (ownerSecret: string) =>
  Effect.gen(function*() {
    const apiKeys = yield* ApiKeys
    const plans = yield* PlanStore
    const agents = yield* AgentStore
    const accountId = (yield* apiKeys.authenticate(ownerSecret)).account.id
    const now = Date.now()
    const at = (offset: number) => Time.toTimestamp(now + offset)

    const key = (
      name: string,
      scope: { machine_id?: string; subscription_id?: string; rental_id?: string; agent_id?: string },
      permissions: ReadonlyArray<Permission> = PermissionValues
    ) =>
      Effect.map(apiKeys.issue(accountId, { name, permissions, ...scope }), (k) => k.secret)

    const plan = (ends: number) =>
      Effect.gen(function*() {
        const id = yield* generateId("sub")
        yield* plans.insertSubscription({
          id,
          account_id: accountId,
          order_id: `ord_matrix_${id}`,
          machine_id: PLAN_MACHINE,
          plan_id: "basic",
          paid_with: "stablecoin",
          auto_renews: false,
          cancel_at_period_end: false,
          current_period_start: at(ends - 30 * DAY),
          current_period_end: at(ends),
          created_at: at(ends - 30 * DAY),
          card_reference: null,
          renewal_error: null
        })
        return id
      })
    const rental = (ends: number) =>
      Effect.gen(function*() {
        const id = yield* generateId("rent")
        yield* plans.insertRental({
          id,
          account_id: accountId,
          order_id: `ord_matrix_${id}`,
          machine_id: RENTAL_MACHINE,
          cpu_cores: 1,
          memory_gb: 1,
          gpu: 0,
          storage_gb: 0,
          hours: 2,
          starts_at: at(ends - 2 * 3_600_000),
          ends_at: at(ends),
          created_at: at(ends - 2 * 3_600_000)
        })
        return id
      })
    const agentKey = (state: AgentState) =>
      Effect.gen(function*() {
        const overrides: Partial<AgentRecord> = state === "active" || state === "lapsed"
          ? { status: "active", expires_at: at(state === "active" ? 30 * DAY : -1) }
          : { status: state, expires_at: at(-1), revoked_at: state === "revoked" ? at(-1) : null }
        const agent = yield* makeAgent(accountId, { approval: null, ...overrides })
        yield* agents.insert(agent)
        return yield* key(`matrix-agent-${state}`, { agent_id: agent.id }, AGENT_PERMISSIONS)
      })

    const runningPlan = yield* plan(30 * DAY)
    return {
      scoped: {
        machine: yield* key("matrix-machine", { machine_id: PINNED_MACHINE }),
        plan: yield* key("matrix-plan", { subscription_id: runningPlan }),
        rental: yield* key("matrix-rental", { rental_id: yield* rental(3_600_000) })
      },
      ended: {
        plan: yield* key("matrix-plan-ended", { subscription_id: yield* plan(-DAY) }),
        rental: yield* key("matrix-rental-ended", { rental_id: yield* rental(-3_600_000) })
      },
      agents: {
        active: yield* agentKey("active"),
        revoked: yield* agentKey("revoked"),
        failed: yield* agentKey("failed"),
        expired: yield* agentKey("expired"),
        lapsed: yield* agentKey("lapsed")
      },
      foreignPlan: yield* plan(30 * DAY)
    } satisfies KeyWorld
  })
