/**
 * Stores an order made outside a person's request (an off-session charge's, a pay link's) unless
 * it is stored already. Two processes working on the same order (a charge resumed, a link offered
 * twice) may both try: the loser's insert is a defect of a duplicate id, and the order being there
 * then is the answer, not a failure.
 */
import { Effect } from "effect"
import type { OrderRecord, OrderStore } from "./OrderStore.ts"

export const storeOrderOnce = (store: OrderStore["Service"], order: OrderRecord): Effect.Effect<void> =>
  Effect.gen(function*() {
    if ((yield* store.findOrder(order.id)) !== undefined) return
    yield* store.insertOrder(order).pipe(
      Effect.catchDefect((defect) =>
        Effect.flatMap(store.findOrder(order.id), (found) => (found === undefined ? Effect.die(defect) : Effect.void)))
    )
  })
