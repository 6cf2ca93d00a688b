/**
 * Where links point. The base URL the links of the request being handled are built on (no trailing slash), when
 * known: set by the HTTP layer from the rules of http/PublicUrl.ts, read by the areas that hand
 * out links (an agent approval's `return_to`, a checkout's `pay_url`).
 */
import { Context } from "effect"

export const RequestBaseUrl = Context.Reference<string | undefined>("@model-platform/core/http/RequestBaseUrl", {
  defaultValue: () => undefined
})

/** What the shell says about its addresses (PlatformOptions.publicUrl and requestUrlFromShell). */
export interface PublicAddressSettings {
  readonly publicUrl?: string | undefined
  /** The request's absolute URL is the shell's own, not the client's (a web handler's shell). */
  readonly requestUrlFromShell?: boolean | undefined
}

export const PublicAddress = Context.Reference<PublicAddressSettings>("@model-platform/core/http/PublicAddress", {
  defaultValue: () => ({})
})
