/**
 * The simulated network with several workers (src/WorkerNetwork.ts): each worker process reaches
 * the primary's one network over IPC, so what one worker registered another sees (an agent's key,
 * its revocation); amounts in wei (bigints) arrive whole; without the primary, NetworkUnavailable.
 * Each call runs in a process of its own (test/workerNetworkChild.ts), this test being the primary.
 */
import { Network, SimulatedNetwork } from "@model-platform/core/agents"
import { Effect, ManagedRuntime } from "effect"
import { fork, spawnSync } from "node:child_process"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { answerNetworkCall } from "../src/WorkerNetwork.ts"

const CHILD = path.join(import.meta.dirname, "workerNetworkChild.ts")

describe("the simulated network over IPC (workers and their primary)", () => {
  const primary = ManagedRuntime.make(SimulatedNetwork.layer())
  afterAll(() => primary.dispose())

  /** One call in a new worker process: the outcome it got from this process's network. */
  const inWorker = async (op: string, did: string): Promise<unknown> => {
    const network = await primary.runPromise(Effect.service(Network))
    return new Promise((resolve, reject) => {
      const child = fork(CHILD, [op, did], { serialization: "advanced", stdio: ["ignore", "inherit", "inherit", "ipc"] })
      child.on("message", (message: { readonly type?: string; readonly outcome?: unknown }) => {
        if (answerNetworkCall(network, (answer) => child.send(answer), message)) return
        if (message.type === "outcome") resolve(message.outcome)
      })
      child.on("exit", (code) => code !== 0 && reject(new Error(`the worker exited with ${code}`)))
    })
  }

  it("an agent one worker registered is known to the others: its key, its revocation, its caps in wei", async () => {
    const did = "did:svc:machine:acct_owner:agt_1"
    expect(await inWorker("register", did)).toEqual({ value: expect.objectContaining({ state: "registered", did }) })
    expect(await inWorker("key", did)).toEqual({ value: expect.stringMatching(/^nk_/) })
    expect(await inWorker("revoke", did)).toEqual({ value: { state: "revoked" } })
    expect(await inWorker("key", did)).toEqual({ value: null })
    expect(await inWorker("register", did)).toEqual({ value: { state: "refused", error: `agent ${did} was revoked` } })
    const held = (await primary.runPromise(Effect.flatMap(Effect.service(SimulatedNetwork), (n) => n.agents))).get(did)
    expect(held?.settings.max_daily_wei).toBe(5n * 10n ** 18n)
    expect(held?.key_hashes).toHaveLength(1)
  }, 60_000)

  it("without a primary to answer, a call is NetworkUnavailable (the caller tries again later)", () => {
    const run = spawnSync(process.execPath, [CHILD, "key", "did:svc:machine:a:b"], { encoding: "utf8", timeout: 30_000 })
    expect(JSON.parse(run.stdout.trim())).toEqual({ unavailable: expect.stringContaining("primary process is gone") })
  }, 60_000)
})
