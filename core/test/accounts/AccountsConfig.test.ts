import { ConfigProvider, Effect, Exit } from "effect"
import { describe, expect, it } from "vitest"
import { RecoveryDelayConfig } from "../../src/accounts/AccountsConfig.ts"

const read = (env: Record<string, string>) =>
  Effect.runSyncExit(RecoveryDelayConfig.parse(ConfigProvider.fromEnv({ env })))

describe("ACCOUNTS_RECOVERY_DELAY_HOURS", () => {
  it("is unset (the service's default), hours in milliseconds, or refused at start", () => {
    expect(read({})).toStrictEqual(Exit.succeed(undefined))
    expect(read({ ACCOUNTS_RECOVERY_DELAY_HOURS: "0.5" })).toStrictEqual(Exit.succeed(30 * 60_000))
    expect(read({ ACCOUNTS_RECOVERY_DELAY_HOURS: "0" })).toStrictEqual(Exit.succeed(0))
    for (const bad of ["-1", "x", "9000"]) {
      expect(Exit.isFailure(read({ ACCOUNTS_RECOVERY_DELAY_HOURS: bad })), bad).toBe(true)
    }
  })
})
