/**
 * An account service whose agent approvals (agents/AgentApprovals.ts) are never approved: each
 * create is taken (an id and an approve_url under `accountsUrl`) and every read of it answers
 * pending. For suites that need agents to exist (awaiting approval) without an owner approving
 * them, such as the isolation matrix; reading someone else's approval is unavailable, as the
 * account service would refuse it.
 */
import { AgentApprovals, ApprovalsUnavailable } from "@model-platform/core/agents"
import { Effect, Layer } from "effect"

export const pendingApprovalsLayer = (accountsUrl = "https://accounts.test"): Layer.Layer<AgentApprovals> =>
  Layer.sync(AgentApprovals, () => {
    const subs = new Map<string, string>()
    let count = 0
    return AgentApprovals.of({
      create: (sub) =>
        Effect.sync(() => {
          const id = `apr_pending_${++count}_${crypto.randomUUID().slice(0, 8)}`
          subs.set(id, sub)
          return { id, approve_url: `${accountsUrl}/approve/${id}` }
        }),
      read: (sub, id) =>
        subs.get(id) === sub
          ? Effect.succeed({ state: "pending" as const })
          : Effect.fail(new ApprovalsUnavailable({ reason: `no approval ${id} of ${sub}` }))
    })
  })
