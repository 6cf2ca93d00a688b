/** The agents' view of an account's owner (agents/AgentOwners.ts), read from the people store. */
import { Effect, Layer } from "effect"
import { AgentOwners } from "../agents/AgentOwners.ts"
import { PeopleStore } from "./PeopleStore.ts"

export const AgentOwnersFromPeople: Layer.Layer<AgentOwners, never, PeopleStore> = Layer.effect(
  AgentOwners,
  Effect.gen(function*() {
    const people = yield* PeopleStore
    return AgentOwners.of({
      personOf: (accountId) => Effect.map(people.getIdentity(accountId), (identity) => identity?.person_id),
      ownerOf: (accountId) =>
        Effect.flatMap(people.getIdentity(accountId), (identity) =>
          identity === undefined
            ? Effect.succeed(undefined)
            : Effect.map(people.listPasskeys(identity.person_id), (passkeys) => ({
              person_id: identity.person_id,
              identity: identity.state,
              error: identity.error,
              passkeys: passkeys.length
            })))
    })
  })
)
