/**
 * The agent approval page (docs/agents.md "Approvals"): what the platform asks the owner to
 * approve — the agent's name, capabilities, network caps in tokens, credit limits and how long the
 * delegation lasts, or its revocation — and a button that approves with one of the owner's
 * passkeys (the page script's "approve" ceremony). Every value is HTML-escaped. Elements tests look
 * for carry stable ids (#approval with data-state, #approve, #settings).
 */
import { formatTokens } from "../../agents/Amounts.ts"
import { escapeHtml } from "./CheckoutPage.ts"
import { microToCredits } from "../../kernel/Money.ts"
import type { ApprovalPageView } from "../../accounts/Approvals.ts"
import { errorLine, layout, okLine, type PageContext } from "./PageFrame.ts"


const APPROVAL_STYLE = `
  #settings th { text-align: left; font-weight: 600; color: #6b7280; font-size: .85rem; width: 40%; vertical-align: top; padding-right: .75rem; }
  #settings td { padding-bottom: .35rem; }
`

const row = (label: string, value: string) => `<tr><th>${escapeHtml(label)}</th><td>${escapeHtml(value)}</td></tr>`

const settingsTable = (view: ApprovalPageView) => {
  const s = view.settings
  if (s === null) return ""
  const credits = (micro: bigint | null, per: string) => {
    if (micro === null) return `no limit ${per}`
    const amount = microToCredits(micro)
    return `${amount} ${amount === 1 ? "credit" : "credits"} ${per}`
  }
  const tokens = (wei: bigint | null) => (wei === null ? "no cap" : `${formatTokens(wei)} tokens`)
  return `<table class="list" id="settings"><tbody>
${row("Agent", view.agent_name)}
${row("Can", s.capabilities.join(", "))}
${row("Spend on inference", `${credits(s.daily_limit, "a day (UTC)")}; ${credits(s.total_limit, "in total")}`)}
${row("Largest network payment", tokens(s.max_transaction_wei))}
${row("Network payments a day", tokens(s.max_daily_wei))}
${row("Delegation lasts", `${s.expires_in_days} days from approval`)}
</tbody></table>`
}

const QUESTION: Record<ApprovalPageView["kind"], string> = {
  create: "An application asks to create an agent that acts for you.",
  update: "An application asks to change what your agent may do.",
  revoke: "An application asks to revoke your agent: its keys stop working."
}

const OUTCOME: Record<ApprovalPageView["state"], string> = {
  pending: "",
  approved: "Approved. You can close this page and go back to the application.",
  collected: "Approved. You can close this page and go back to the application.",
  expired: "This approval link has expired (links are valid 30 minutes). Ask again from the application.",
  failed: "The network refused it"
}

/** What went wrong with a closed approval, for the page's error line. */
const problemOf = (view: ApprovalPageView): string | undefined =>
  view.state === "failed" ? `${OUTCOME.failed}: ${view.error ?? "no reason given"}` : view.state === "expired" ? OUTCOME.expired : undefined

/** The approval page of `view`, with the approve button while it waits. */
export const approvalPage = (ctx: PageContext, view: ApprovalPageView, error?: string): string =>
  layout(
    ctx,
    view.kind === "revoke" ? "Revoke an agent" : "Approve an agent",
    `<h1>${view.kind === "revoke" ? "Revoke an agent" : view.kind === "update" ? "Change an agent" : "Approve an agent"}</h1>
<div id="approval" data-state="${escapeHtml(view.state)}">
<p>${escapeHtml(QUESTION[view.kind])}</p>
${view.agent_did === null ? "" : `<p class="note">Agent ${escapeHtml(view.agent_did)}</p>`}
${settingsTable(view)}
${errorLine(error ?? problemOf(view))}
${
      view.state === "pending"
        ? `<p class="note">Approving needs one of your passkeys. The link works until ${escapeHtml(view.expires_at.replace("T", " ").slice(0, 16))} UTC.</p>
<button type="button" id="approve" data-ceremony="approve" data-approval="${escapeHtml(view.id)}">${
          view.kind === "revoke" ? "Revoke with your passkey" : "Approve with your passkey"
        }</button>`
        : view.state === "approved" || view.state === "collected"
        ? okLine(OUTCOME[view.state])
        : ""
    }
${view.return_to === null || view.state === "pending" ? "" : `<p><a href="${escapeHtml(view.return_to)}" id="return">Back to the application</a></p>`}
</div>`,
    { script: view.state === "pending", style: APPROVAL_STYLE }
  )
