/**
 * Port: an account's owner as the account service knows them (accounts/AgentOwnersFromPeople.ts
 * reads them from the people store): the person approvals are addressed to (`sub`), the state of
 * their identity and how many passkeys they hold — an agent is approved only with a passkey.
 */
import { Context, type Effect } from "effect"
import type { AccountId } from "../kernel/Ids.ts"

export interface AgentOwner {
  readonly person_id: string
  readonly identity: "provisioning" | "ready" | "failed"
  /** Why the identity failed, or null. */
  readonly error: string | null
  readonly passkeys: number
}

export class AgentOwners extends Context.Service<AgentOwners, {
  /** The account's person (the approvals' `sub`), when the account has one. */
  readonly personOf: (accountId: AccountId) => Effect.Effect<string | undefined>
  /** The account's owner with their identity's state and passkeys, when the account has a person. */
  readonly ownerOf: (accountId: AccountId) => Effect.Effect<AgentOwner | undefined>
}>()("@model-platform/core/agents/AgentOwners") {}
