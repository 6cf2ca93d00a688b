/**
 * The one mapping from the areas' refusals to HTTP (docs/architecture.md "Errors"). A service
 * fails with its area's tagged error, whose `reason` names the refusal; here each (tag, reason)
 * has the spec's status, and the spec's `code` (the reason itself unless the table says another).
 * The table's type makes it total: a reason added to an area error and left out here does not
 * type-check (core/test/http/Refusals.test.ts checks the same at run time).
 *
 * Handlers and pages take a service through `answered`, which turns its area errors into the
 * platform's error classes (Errors.ts) the API encodes in the spec's error shape.
 */
import { Effect } from "effect"
import * as Errors from "./Errors.ts"
import { AccountError } from "../accounts/AccountErrors.ts"
import { AgentError } from "../agents/AgentErrors.ts"
import { BillingError } from "../billing/BillingErrors.ts"
import { CatalogueError } from "../catalogue/CatalogueErrors.ts"
import { DatasetError } from "../datasets/DatasetErrors.ts"
import { FieldworkError } from "../fieldwork/FieldworkErrors.ts"
import { StandingError } from "../gateway/GatewayErrors.ts"
import { KeyError } from "../keys/KeyErrors.ts"
import { LedgerError } from "../ledger/LedgerErrors.ts"
import { OrderError, TicketError } from "../payments/PaymentErrors.ts"
import { PlanError } from "../plans/PlanErrors.ts"

/** Every area error class, for the totality test and the guard below. */
export const AreaErrorClasses = [
  AccountError,
  AgentError,
  CatalogueError,
  KeyError,
  LedgerError,
  PlanError,
  OrderError,
  TicketError,
  BillingError,
  DatasetError,
  FieldworkError,
  StandingError
] as const
export type AreaError = InstanceType<(typeof AreaErrorClasses)[number]>

export type RefusalStatus = 400 | 401 | 402 | 403 | 404 | 409 | 410 | 425 | 429 | 503
/** A status (the code is the reason), or a status and the spec's code when the reason is finer than it. */
export type RefusalEntry = RefusalStatus | readonly [RefusalStatus, string]

type RefusalTable = {
  readonly [E in AreaError as E["_tag"]]: { readonly [R in E["reason"]]: RefusalEntry }
}

const invalid = [400, "invalid_request"] as const

export const REFUSALS = {
  AccountError: {
    invalid_email: 400,
    email_taken: 409,
    email_unavailable: 503,
    rate_limited: 429,
    invalid_flow: 400,
    verification_failed: 400,
    unknown_passkey: 401,
    passkey_taken: 409,
    passkey_not_found: 404,
    last_passkey: 409,
    session_required: 401,
    csrf_mismatch: 403,
    token_unknown: 404,
    token_used: 410,
    token_expired: 410,
    token_early: 425,
    invalid_request: 400,
    approval_not_found: 404,
    approval_closed: 409,
    client_unauthorized: 401,
    network_unavailable: 503,
    not_owner_account: 409
  },
  AgentError: {
    agent_not_found: 404,
    agent_not_active: 409,
    change_pending: 409,
    passkey_required: 409,
    identity_not_ready: 409,
    no_serving_nodes: 409,
    approvals_unavailable: 503,
    key_lacks_permission: 403,
    key_not_scoped_to_machine: 403,
    machine_not_found: 404
  },
  CatalogueError: {
    model_not_found: 404,
    machine_not_found: 404,
    operator_not_found: 404
  },
  KeyError: {
    missing_api_key: 401,
    invalid_api_key: 401,
    key_lacks_permission: 403,
    key_scope_too_narrow: 403,
    scopes_conflict: invalid,
    machine_not_found: 404,
    subscription_not_found: 404,
    rental_not_found: 404,
    key_not_found: 404
  },
  LedgerError: {
    invalid_limit: invalid
  },
  PlanError: {
    rental_not_offered: invalid,
    rental_out_of_range: invalid,
    plan_not_offered: invalid,
    price_inexact: invalid,
    subscription_not_found: 404,
    renewal_not_stablecoin: invalid,
    renewal_mismatch: invalid,
    plan_ended: invalid,
    plan_renewing: invalid,
    plan_not_card: invalid
  },
  OrderError: {
    order_not_found: 404,
    order_already_paid: 409,
    order_expired: 409,
    payment_conflict: 409,
    deposit_in_progress: 409,
    deposit_already_opened: 409,
    checkout_not_found: 404,
    receipt_not_found: 404,
    machine_not_found: 404,
    package_not_found: 404,
    credit_price_unset: invalid,
    card_payments_off: invalid,
    stablecoin_payments_off: invalid,
    stablecoin_option_invalid: invalid,
    invalid_limit: invalid,
    invalid_transfer: invalid
  },
  TicketError: {
    ticket_not_found: 404,
    ticket_already_redeemed: 409
  },
  BillingError: {
    spend_limit_invalid: invalid,
    key_not_found: 404,
    usage_range_invalid: invalid,
    invalid_limit: invalid,
    threshold_invalid: invalid,
    card_required: invalid,
    card_payments_off: invalid,
    card_setup_off: invalid,
    checkout_not_found: 404,
    statement_not_found: 404
  },
  DatasetError: {
    dataset_not_found: 404,
    dataset_deleted: 409,
    item_not_found: 404,
    export_not_found: 404
  },
  FieldworkError: {
    project_settings_invalid: invalid,
    project_not_found: 404,
    consent_version_exists: 409,
    ingest_key_not_found: 404
  },
  StandingError: {
    agent_revoked: [401, "invalid_api_key"],
    agent_expired: 403,
    subscription_inactive: 403,
    rental_ended: 403
  }
} as const satisfies RefusalTable

type Body = { readonly code: string; readonly message: string; readonly scope?: string }

/** What a refusal answers with: a platform error (Errors.ts), or one of the account pages' own. */
export type Answer = Errors.PlatformError | Errors.Gone | Errors.TooEarly

const byStatus: Record<RefusalStatus, (error: Body) => Answer> = {
  400: (error) => new Errors.BadRequest({ error }),
  401: (error) => new Errors.Unauthorized({ error }),
  402: (error) => new Errors.PaymentRequired({ error }),
  403: (error) => new Errors.Forbidden({ error }),
  404: (error) => new Errors.NotFound({ error }),
  409: (error) => new Errors.Conflict({ error }),
  410: (error) => new Errors.Gone({ error }),
  425: (error) => new Errors.TooEarly({ error }),
  429: (error) => new Errors.TooManyRequests({ error }),
  503: (error) => new Errors.ServiceUnavailable({ error })
}

/** The status and code an area error answers with. */
export const refusalOf = (error: AreaError): { readonly status: RefusalStatus; readonly code: string } => {
  const entry: RefusalEntry = (REFUSALS[error._tag] as Record<string, RefusalEntry>)[error.reason]!
  return typeof entry === "number" ? { status: entry, code: error.reason } : { status: entry[0], code: entry[1] }
}

export const isAreaError = (u: unknown): u is AreaError => AreaErrorClasses.some((Class) => u instanceof Class)

/** The platform error (status, code, message, scope) an area error answers with. */
export const toPlatformError = (error: AreaError): Answer => {
  const { code, status } = refusalOf(error)
  // The spec's optional `scope` names what a refusal is about (the permission a key lacks).
  const scope = "scope" in error ? error.scope : undefined
  return byStatus[status](scope === undefined ? { code, message: error.message } : { code, message: error.message, scope })
}

const toHttpError = <E>(error: E) => (isAreaError(error) ? toPlatformError(error) : error)

/** The platform error class of each status. */
interface ClassOfStatus {
  400: Errors.BadRequest
  401: Errors.Unauthorized
  402: Errors.PaymentRequired
  403: Errors.Forbidden
  404: Errors.NotFound
  409: Errors.Conflict
  410: Errors.Gone
  425: Errors.TooEarly
  429: Errors.TooManyRequests
  503: Errors.ServiceUnavailable
}
type StatusOfEntry<Entry> = Entry extends readonly [infer S, string] ? S : Entry
/** The platform errors an area error of these reasons answers with (each endpoint declares its own). */
type PlatformErrorOf<E extends AreaError> = E extends AreaError
  ? ClassOfStatus[StatusOfEntry<(typeof REFUSALS)[E["_tag"]][E["reason"] & keyof (typeof REFUSALS)[E["_tag"]]]> & RefusalStatus]
  : never

/** An error channel with its area errors answered as platform errors. */
export type Answered<E> = E extends AreaError ? PlatformErrorOf<E> : E

/** A service whose effects fail with platform errors in place of area errors. */
export type AnsweredService<S> = {
  readonly [K in keyof S]: S[K] extends (...args: infer P) => Effect.Effect<infer A, infer E, infer R>
    ? (...args: P) => Effect.Effect<A, Answered<E>, R>
    : S[K] extends Effect.Effect<infer A, infer E, infer R> ? Effect.Effect<A, Answered<E>, R>
    : S[K]
}

/** One effect's area errors answered as platform errors. */
export const answer = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, Answered<E>, R> =>
  Effect.mapError(effect, toHttpError) as Effect.Effect<A, Answered<E>, R>

/** A service as handlers use it: each of its effects fails with platform errors (see `answer`). */
export const answered = <S extends object>(service: S): AnsweredService<S> =>
  Object.fromEntries(
    Object.entries(service).map(([name, member]) => [
      name,
      typeof member === "function"
        ? (...args: ReadonlyArray<unknown>) => {
          const result = member(...args)
          return Effect.isEffect(result) ? answer(result) : result
        }
        : Effect.isEffect(member)
        ? answer(member)
        : member
    ])
  ) as AnsweredService<S>
