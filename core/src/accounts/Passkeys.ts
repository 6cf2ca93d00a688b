/**
 * What a signed-in person does at manage_url (docs/accounts.md "Ceremonies"): add, list and remove
 * passkeys (never the last one: the store refuses it atomically), and create an API key on their
 * account. Every change is CSRF-checked by Sessions.change.
 */
import { Effect } from "effect"
import { normalize, type Permission } from "../keys/Permissions.ts"
import * as Time from "../kernel/Time.ts"
import { accountError } from "./AccountErrors.ts"
import type { FinishWithNameInput, PasskeyView, RelyingParty, SessionCall } from "./AccountTypes.ts"
import { passkeyName } from "./Ceremonies.ts"
import type { AccountDeps } from "./Deps.ts"
import type { Identities } from "./Identities.ts"
import type { PasskeyRecord } from "./Records.ts"
import { beginFlow, consumeFlow, registrationOptions, verifyRegistration } from "./WebAuthn.ts"

/**
 * What a person may give a key made on their pages: call models, read the account, manage it
 * (keys, orders, tickets, billing settings). The other permissions (datasets, fieldwork, voices,
 * wallets) belong to the areas that hand them out.
 */
export const PERSON_KEY_PERMISSIONS = normalize(["inference", "read", "manage"])
/** Ticked when the form opens: a key that calls models and reads the account. */
export const DEFAULT_PERSON_KEY_PERMISSIONS = normalize(["inference", "read"])

export const toPasskeyView = (p: PasskeyRecord): PasskeyView => ({
  credential_id: p.credential_id,
  name: p.name,
  transports: p.transports,
  created_at: p.created_at,
  last_used_at: p.last_used_at
})

export const makePasskeys = (deps: AccountDeps, identities: Identities) => {
  const { apiKeys, people, sessions } = deps

  const beginAddPasskey = Effect.fn("AccountService.beginAddPasskey")(function*(call: SessionCall & RelyingParty) {
    const person = yield* sessions.change(call)
    const exclude = yield* people.listPasskeys(person.id)
    const options = yield* registrationOptions({ rpId: call.rpId, userId: person.id, userName: person.email, exclude })
    return yield* beginFlow(
      people,
      { kind: "add_passkey", challenge: options.challenge, subject: person.id, extra: "" },
      options
    )
  })

  const finishAddPasskey = Effect.fn("AccountService.finishAddPasskey")(function*(
    call: SessionCall & FinishWithNameInput
  ) {
    const person = yield* sessions.change(call)
    const flow = yield* consumeFlow(people, call.flow, "add_passkey")
    if (flow.subject !== person.id) {
      return yield* accountError("invalid_flow", "This step was begun by someone else; start again.")
    }
    const credential = yield* verifyRegistration(call.response, flow.challenge, call)
    const passkey: PasskeyRecord = {
      ...credential,
      person_id: person.id,
      name: passkeyName(call.name, "Passkey"),
      created_at: yield* Time.now,
      last_used_at: null
    }
    const added = yield* people.addPasskey(passkey)
    if (added._tag !== "Added") return yield* accountError("passkey_taken", "This passkey is registered already.")
    return toPasskeyView(passkey)
  })

  const listPasskeys = Effect.fn("AccountService.listPasskeys")(function*(session: string) {
    const person = yield* sessions.read(session)
    return (yield* people.listPasskeys(person.id)).map(toPasskeyView)
  })

  const removePasskey = Effect.fn("AccountService.removePasskey")(function*(
    call: SessionCall & { readonly credentialId: string }
  ) {
    const person = yield* sessions.change(call)
    const removed = yield* people.removePasskey(person.id, call.credentialId)
    if (removed._tag === "NotFound") return yield* accountError("passkey_not_found", "You have no such passkey.")
    if (removed._tag === "LastPasskey") {
      return yield* accountError("last_passkey", "This is your only passkey: add another before removing it.")
    }
  })

  const createKey = Effect.fn("AccountService.createKey")(function*(
    call: SessionCall & { readonly name: string; readonly permissions: ReadonlyArray<string> }
  ) {
    const person = yield* sessions.change(call)
    const name = call.name.trim()
    if (name.length === 0 || name.length > 64 || /[\u0000-\u001f\u007f]/.test(name)) {
      return yield* accountError("invalid_request", "A key's name is 1 to 64 characters, without control characters.")
    }
    const unknown = call.permissions.find((p) => !PERSON_KEY_PERMISSIONS.includes(p as Permission))
    if (unknown !== undefined || call.permissions.length === 0) {
      return yield* accountError(
        "invalid_request",
        `Choose at least one of ${PERSON_KEY_PERMISSIONS.join(", ")} for the key's permissions.`
      )
    }
    const { person: owner } = yield* identities.ensureAccount(person)
    return yield* apiKeys.issue(owner.account_id!, { name, permissions: normalize(call.permissions as ReadonlyArray<Permission>) })
  })

  return { beginAddPasskey, finishAddPasskey, listPasskeys, removePasskey, createKey }
}
