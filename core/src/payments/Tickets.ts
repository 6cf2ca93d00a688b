/**
 * Gift tickets (docs/payments.md "Gift tickets"): those an account bought, and redeeming one —
 * ONE conditional write (OrderStore.redeemTicket) and a grant with ref "ticket:<code>" in the
 * redeemer's ledger, so a redeemer retrying gets 409 but an interrupted grant is completed.
 */
import { Context, Effect, Layer } from "effect"
import type { Caller } from "../keys/Caller.ts"
import type { AccountId } from "../kernel/Ids.ts"
import { microToCredits } from "../kernel/Money.ts"
import * as Time from "../kernel/Time.ts"
import type { RedeemResponse, TicketList } from "../ledger/Credits.ts"
import { Ledger } from "../ledger/Ledger.ts"
import { normalizeTicketCode, ticketRef, toTicket } from "./OrderRules.ts"
import { OrderStore, type TicketRecord } from "./OrderStore.ts"
import { type TicketError, ticketError } from "./PaymentErrors.ts"

export class Tickets extends Context.Service<Tickets, {
  /** GET /tickets: tickets this account bought, newest first, redeemed or not; codes as OrderRules.ticketCodeFor shows them. */
  readonly list: (caller: Caller) => Effect.Effect<TicketList>
  /**
   * POST /credits/redeem: once per ticket, by any account. 404 ticket_not_found for an unknown
   * (or malformed) code, 409 ticket_already_redeemed after the first redemption.
   */
  readonly redeem: (caller: Caller, code: string) => Effect.Effect<RedeemResponse, TicketError>
}>()("@model-platform/core/payments/Tickets") {
  static readonly layer: Layer.Layer<Tickets, never, OrderStore | Ledger> = Layer.effect(
    Tickets,
    Effect.gen(function*() {
      const store = yield* OrderStore
      const ledger = yield* Ledger

      const grant = (ticket: TicketRecord, accountId: AccountId) =>
        ticket.credits > 0n
          ? Effect.asVoid(ledger.credit(accountId, {
            ref: ticketRef(ticket.code),
            machine_id: ticket.machine_id,
            amount: ticket.credits,
            type: "credit_added"
          }))
          : Effect.void

      const notFound = ticketError("ticket_not_found", "No ticket has this code.")

      const redeem = Effect.fn("Tickets.redeem")(function*(caller: Caller, typed: string) {
        const code = normalizeTicketCode(typed)
        if (code === undefined) return yield* notFound
        const outcome = yield* store.redeemTicket(code, caller.account.id, yield* Time.now)
        switch (outcome._tag) {
          case "NotFound":
            return yield* notFound
          case "AlreadyRedeemed": {
            // The redeemer asking again: complete a grant a crash may have cut short (a no-op
            // otherwise: the ledger ignores a ref it has), then say it was used.
            if (outcome.ticket.redeemed_by === caller.account.id) yield* grant(outcome.ticket, caller.account.id)
            return yield* ticketError(
              "ticket_already_redeemed",
              outcome.ticket.redeemed_by === caller.account.id
                ? "You have already redeemed this ticket."
                : "This ticket has already been redeemed."
            )
          }
          case "Redeemed": {
            yield* grant(outcome.ticket, caller.account.id)
            return {
              redeemed: true,
              credits: microToCredits(outcome.ticket.credits),
              machine_id: outcome.ticket.machine_id
            } satisfies RedeemResponse
          }
        }
      })

      return Tickets.of({
        list: (caller) =>
          Effect.map(store.ticketsBoughtBy(caller.account.id), (tickets) => ({
            data: tickets.map((t) => toTicket(t, caller))
          })),
        redeem
      })
    })
  )
}
