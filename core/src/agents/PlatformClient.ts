/**
 * The platform's client at the account service's agent approvals API (docs/agents.md
 * "Approvals"): an id and a secret the platform sends with HTTP Basic. The account service is
 * configured with the id and the secret's SHA-256 only (AccountsConfig.platformClient); the secret
 * itself lives in the platform's configuration (PLATFORM_CLIENT_SECRET) and is never logged. A
 * shell serving both in one process, without a configured secret, makes a random one at start.
 */
import { Config, Option, Redacted } from "effect"
import { base64url } from "../kernel/Ids.ts"
import { sha256Hex } from "../kernel/Sha256.ts"

export interface PlatformClient {
  readonly id: string
  readonly secret: Redacted.Redacted<string>
}

export const DEFAULT_PLATFORM_CLIENT_ID = "platform"

/** A client with a fresh random secret (256 bits). */
export const randomPlatformClient = (id: string = DEFAULT_PLATFORM_CLIENT_ID): PlatformClient => ({
  id,
  secret: Redacted.make(base64url(crypto.getRandomValues(new Uint8Array(32))))
})

/** What the account service keeps of the client. */
export const accountServiceView = (client: PlatformClient) => ({ id: client.id, secretSha256: sha256Hex(Redacted.value(client.secret)) })

/** PLATFORM_CLIENT_ID (default "platform") and PLATFORM_CLIENT_SECRET (unset: undefined, the shell decides). */
export const PlatformClientConfig: Config.Config<PlatformClient | undefined> = Config.all({
  id: Config.String("PLATFORM_CLIENT_ID").pipe(Config.withDefault(DEFAULT_PLATFORM_CLIENT_ID)),
  secret: Config.option(Config.Redacted("PLATFORM_CLIENT_SECRET"))
}).pipe(Config.map(({ id, secret }) =>
  // Empty is unset (a stack parameter left at its default).
  Option.match(Option.filter(secret, (s) => Redacted.value(s) !== ""), { onNone: () => undefined, onSome: (s) => ({ id, secret: s }) })
))
