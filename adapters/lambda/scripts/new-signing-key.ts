/**
 * Prints a fresh service assertion key for the Lambda deployment: a P-256 private JWK as JSON
 * (agents/ServiceAssertions.ts), for the stack parameter PlatformSigningKey, which every function
 * gets as PLATFORM_SIGNING_KEY (docs/agents.md "Service assertions"):
 *
 *   cdk deploy ... --parameters PlatformSigningKey="$(./platform node adapters/lambda/scripts/new-signing-key.ts)"
 *
 * The key goes to stdout only; keep it out of shell history and logs.
 */
const pair = await crypto.subtle.generateKey({ name: "ECDSA", namedCurve: "P-256" }, true, ["sign", "verify"])
const { crv, d, kty, x, y } = await crypto.subtle.exportKey("jwk", pair.privateKey)
process.stdout.write(JSON.stringify({ kty, crv, x, y, d }) + (process.stdout.isTTY ? "\n" : ""))
