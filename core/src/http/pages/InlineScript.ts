/**
 * The CSP source that allows a page's one inline script: 'sha256-<base64 of its UTF-8 bytes'
 * digest>'. Hashed at the page's first request, not when the module loads: a cold start (the
 * Lambda's) that never serves the page does not pay for it.
 */
import { base64url } from "../../kernel/Ids.ts"
import { sha256 } from "../../kernel/Sha256.ts"

/** The script's CSP source, computed at the first call and kept. */
export const scriptSource = (script: string): () => string => {
  let source: string | undefined
  return () => {
    if (source === undefined) {
      const b64 = base64url(sha256(new TextEncoder().encode(script))).replaceAll("-", "+").replaceAll("_", "/")
      source = `'sha256-${b64}${"=".repeat((4 - b64.length % 4) % 4)}'`
    }
    return source
  }
}
