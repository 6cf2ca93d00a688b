/**
 * Deposit addresses from an extended public key (BIP-32), so the platform never holds a private
 * key (docs/payments.md "Stablecoin on an EVM chain"). The key is the xpub of a BIP-44 account,
 * m/44'/60'/0' for the wallet's first Ethereum account; address i is its child 0/i, i.e.
 * m/44'/60'/0'/0/i: the path every BIP-44 wallet derives from the same seed, which is how the
 * operator sweeps the funds out of each address with the private keys kept offline.
 */
import { HDKey } from "@scure/bip32"
import { secp256k1 } from "@noble/curves/secp256k1.js"
import { getAddress, keccak256, toHex } from "viem"

export interface DepositKey {
  /** Identifies the key (its BIP-32 identifier, hash160 of the public key, in hex): not a secret. */
  readonly keyId: string
  /** The EIP-55 address at index i (m/…/0/i). */
  readonly address: (index: number) => string
}

/** BIP-32 child indexes below 2^31 are the non-hardened ones a public key can derive. */
export const MAX_INDEX = 2 ** 31 - 1

/** An EVM address from a compressed or uncompressed secp256k1 public key. */
export const publicKeyToAddress = (publicKey: Uint8Array): string => {
  const uncompressed = secp256k1.Point.fromBytes(publicKey).toBytes(false)
  return getAddress(`0x${keccak256(uncompressed.subarray(1)).slice(-40)}`)
}

/**
 * The deposit key of an extended public key, or the reason it is refused: not a BIP-32 key, or a
 * private one (an xprv must never reach the server: the funds would be as safe as the server).
 */
export const parseDepositKey = (text: string): DepositKey | { readonly problem: string } => {
  let key: HDKey
  try {
    key = HDKey.fromExtendedKey(text.trim())
  } catch (error) {
    return { problem: `not an extended public key (${error instanceof Error ? error.message : String(error)})` }
  }
  if (key.privateKey !== null) {
    return { problem: "it is an extended PRIVATE key; give the server the account's xpub, never its xprv" }
  }
  const external = key.deriveChild(0)
  return {
    keyId: toHex(key.identifier!).slice(2),
    address: (index) => {
      if (!Number.isInteger(index) || index < 0 || index > MAX_INDEX) throw new RangeError(`deposit index ${index} is out of range`)
      return publicKeyToAddress(external.deriveChild(index).publicKey!)
    }
  }
}
