/**
 * The agent store port (core/src/ports/AgentStore.ts) in memory, for tests and the in-process
 * shell: one Ref of encoded records (as the other stores keep them, so a record that does not
 * round-trip fails here too), each write a single `Ref.modify`.
 */
import { type AgentRecord, decodeAgent, encodeAgent } from "@model-platform/core/agents/Records"
import { agentProblem, AgentStore } from "@model-platform/core/ports/AgentStore"
import { Effect, Layer, Ref } from "effect"
import { newestFirst } from "@model-platform/core/ports/PlanStore"

const decoded = (stored: unknown): Effect.Effect<AgentRecord> => {
  const record = decodeAgent(stored)
  return record === undefined ? Effect.die(new Error("AgentStore: a stored agent does not decode")) : Effect.succeed(record)
}

export const AgentStoreMemory: Layer.Layer<AgentStore> = Layer.effect(
  AgentStore,
  Effect.gen(function*() {
    const state = yield* Ref.make<ReadonlyMap<string, unknown>>(new Map())

    const insert = (record: AgentRecord) =>
      Effect.suspend(() => {
        const problem = agentProblem(record, "insert")
        if (problem !== undefined) return Effect.die(new Error(`AgentStore.insert: ${problem}`))
        const encoded = encodeAgent(record)
        return Ref.modify(state, (s): readonly [boolean, ReadonlyMap<string, unknown>] =>
          s.has(record.id) ? [false, s] : [true, new Map(s).set(record.id, encoded)]
        ).pipe(Effect.flatMap((inserted) => inserted ? Effect.void : Effect.die(new Error(`AgentStore.insert: duplicate id ${record.id}`))))
      })

    const get = (id: string) =>
      Effect.flatMap(Ref.get(state), (s) => (s.has(id) ? decoded(s.get(id)) : Effect.succeed(undefined)))

    const list = (accountId: string) =>
      Effect.flatMap(Ref.get(state), (s) => Effect.forEach([...s.values()], decoded)).pipe(
        Effect.map((all) => all.filter((r) => r.account_id === accountId).sort(newestFirst))
      )

    const swap = (next: AgentRecord) =>
      Effect.suspend(() => {
        const problem = agentProblem(next, "swap")
        if (problem !== undefined) return Effect.die(new Error(`AgentStore.swap: ${problem}`))
        const encoded = encodeAgent(next)
        return Ref.modify(state, (s): readonly [boolean, ReadonlyMap<string, unknown>] => {
          const stored = s.get(next.id)
          const current = stored === undefined ? undefined : decodeAgent(stored)
          return current?.version === next.version - 1 && current.account_id === next.account_id
            ? [true, new Map(s).set(next.id, encoded)]
            : [false, s]
        })
      })

    return AgentStore.of({ insert, get, list, swap })
  })
)
