/**
 * What a shell needs for the "evm" rail, from the catalogue's payments.stablecoin and the
 * environment variables each chain names (rpc_url_env, xpub_env): the rail handing out deposit
 * addresses (EvmRail.ts) and the chain reader the deposit watcher uses (ViemChainReader.ts). A
 * missing variable or a key that is not an xpub stops the start with a message naming it; the
 * values themselves are never in a message (an RPC URL may carry a provider's key).
 */
import type { Layer } from "effect"
import type { ChainReader, DepositWatchStore, StablecoinRail } from "@model-platform/core/payments"
import type { StablecoinConfig } from "@model-platform/core/catalogue"
import { type DepositKey, parseDepositKey } from "./Addresses.ts"
import * as EvmRail from "./EvmRail.ts"
import * as ViemChainReader from "./ViemChainReader.ts"

export interface EvmLayers {
  readonly rail: Layer.Layer<StablecoinRail, never, DepositWatchStore>
  readonly reader: Layer.Layer<ChainReader>
}

/** The rail and reader of an "evm" configuration, or the problems that keep it from starting. */
export const evmLayers = (
  stablecoin: StablecoinConfig,
  env: Readonly<Record<string, string | undefined>>
): EvmLayers | { readonly problems: ReadonlyArray<string> } => {
  const problems: Array<string> = []
  const keys = new Map<string, DepositKey>()
  const endpoints = new Map<string, ViemChainReader.ChainEndpoint>()
  for (const [chain, settings] of Object.entries(stablecoin.evm ?? {})) {
    const rpcUrl = env[settings.rpc_url_env]?.trim()
    if (rpcUrl === undefined || rpcUrl === "") problems.push(`${settings.rpc_url_env} (the JSON-RPC URL of ${chain}) is not set`)
    else if (!/^https?:\/\//.test(rpcUrl)) problems.push(`${settings.rpc_url_env} (the JSON-RPC URL of ${chain}) is not an http(s) URL`)
    else endpoints.set(chain, { rpcUrl })
    const xpub = env[settings.xpub_env]
    if (xpub === undefined || xpub.trim() === "") {
      problems.push(`${settings.xpub_env} (the extended public key of ${chain}'s deposit addresses) is not set`)
      continue
    }
    const key = parseDepositKey(xpub)
    if ("problem" in key) problems.push(`${settings.xpub_env}: ${key.problem}`)
    else keys.set(chain, key)
  }
  if (problems.length > 0) return { problems }
  return { rail: EvmRail.layer(keys), reader: ViemChainReader.layer(endpoints) }
}

/**
 * What a shell passes as PlatformOptions.evm for a catalogue: the layers when its rail is "evm",
 * undefined for any other rail, or the problems to refuse the start with.
 */
export const evmOptionsFor = (
  payments: { readonly stablecoin: StablecoinConfig | null },
  env: Readonly<Record<string, string | undefined>>
): { readonly evm: EvmLayers | undefined } | { readonly problems: ReadonlyArray<string> } => {
  if (payments.stablecoin?.processor !== EvmRail.EVM_PROCESSOR) return { evm: undefined }
  const layers = evmLayers(payments.stablecoin, env)
  return "problems" in layers ? layers : { evm: layers }
}
