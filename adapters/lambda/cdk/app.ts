/**
 * The CDK app: one PlatformStack (stack.ts). Run by the CDK CLI (docs/lambda-deploy.md):
 *
 *   cdk synth --app "node cdk/app.ts" -c catalogueFile=../node-http/catalogue.demo.json
 *
 * Context (`-c key=value`), all optional:
 *   stackName              default "ModelPlatform"
 *   bundleDir              a bundle already built by bundle.ts; by default the app bundles
 *                          src/lambda.ts into dist/lambda first
 *   catalogueParameter     the SSM parameter's name (default /model-platform/catalogue)
 *   catalogueFile          a catalogue JSON file: the stack then creates the parameter with it;
 *                          without it the parameter must already exist
 *   ownerKeyParameter      the owner key's SecureString parameter (default /model-platform/owner-key),
 *                          created by the operator before the first deploy (docs/lambda.md)
 *   stripeSecretKeyParameter, stripeWebhookSecretParameter
 *                          Stripe's SecureString parameters (defaults /model-platform/stripe-secret-key,
 *                          /model-platform/stripe-webhook-secret), read when the catalogue names Stripe
 *   accountsUrl            the account service's public address (default: the HTTP API's + /accounts)
 *   retainData             "false" to delete the table and bucket with the stack (default keep)
 *   environment            a JSON object of more variables for every function: those the
 *                          catalogue's "evm" stablecoin rail names (rpc_url_env, xpub_env), e.g.
 *                          '{"BASE_RPC_URL":"https://…","DEPOSIT_XPUB":"xpub…"}'
 *
 * The owner's email is the stack's CloudFormation parameter OwnerEmail, given at deploy time, as
 * are SmtpUrl and SmtpFrom (the account service's mail; docs/lambda-deploy.md).
 * Account and region come from the CLI's environment (CDK_DEFAULT_ACCOUNT, CDK_DEFAULT_REGION).
 */
import { App } from "aws-cdk-lib"
import * as Fs from "node:fs"
import * as Path from "node:path"
import { fileURLToPath } from "node:url"
import { bundle } from "./bundle.ts"
import { PlatformStack, type PlatformStackProps } from "./stack.ts"

export interface AppOptions {
  /** Directory of the bundle; when absent, taken from context `bundleDir` or built by bundle.ts. */
  readonly bundleDir?: string
  /** Where the CLI or a test wants the cloud assembly. */
  readonly outdir?: string
  /** Context values, as `-c` gives them (strings). */
  readonly context?: Readonly<Record<string, string>>
}

const contextString = (app: App, key: string): string | undefined => {
  const value: unknown = app.node.tryGetContext(key)
  return value === undefined || value === null ? undefined : String(value)
}

/** Builds the app and its stack (bundling first when no bundle directory is given). */
export const buildApp = async (options: AppOptions = {}): Promise<{ readonly app: App; readonly stack: PlatformStack }> => {
  const app = new App({
    ...(options.outdir === undefined ? {} : { outdir: options.outdir }),
    ...(options.context === undefined ? {} : { context: options.context })
  })
  const bundleDir = options.bundleDir ?? contextString(app, "bundleDir") ?? (await bundle()).outDir
  const catalogueFile = contextString(app, "catalogueFile")
  const catalogueParameterName = contextString(app, "catalogueParameter")
  const ownerKeyParameterName = contextString(app, "ownerKeyParameter")
  const stripeSecretKeyParameterName = contextString(app, "stripeSecretKeyParameter")
  const stripeWebhookSecretParameterName = contextString(app, "stripeWebhookSecretParameter")
  const accountsUrl = contextString(app, "accountsUrl")
  const environmentJson = contextString(app, "environment")
  const environment = environmentJson === undefined ? undefined : JSON.parse(environmentJson) as Record<string, string>
  for (const [name, value] of Object.entries(environment ?? {})) {
    if (typeof value !== "string") throw new Error(`context environment: ${name} must be a string`)
  }
  const account = process.env["CDK_DEFAULT_ACCOUNT"]
  const region = process.env["CDK_DEFAULT_REGION"]
  const props: PlatformStackProps = {
    bundleDir: Path.resolve(bundleDir),
    retainData: contextString(app, "retainData") !== "false",
    ...(catalogueFile === undefined ? {} : { catalogueJson: Fs.readFileSync(catalogueFile, "utf8") }),
    ...(catalogueParameterName === undefined ? {} : { catalogueParameterName }),
    ...(ownerKeyParameterName === undefined ? {} : { ownerKeyParameterName }),
    ...(stripeSecretKeyParameterName === undefined ? {} : { stripeSecretKeyParameterName }),
    ...(stripeWebhookSecretParameterName === undefined ? {} : { stripeWebhookSecretParameterName }),
    ...(accountsUrl === undefined ? {} : { accountsUrl }),
    ...(environment === undefined ? {} : { environment }),
    ...(account === undefined && region === undefined
      ? {}
      : { env: { ...(account === undefined ? {} : { account }), ...(region === undefined ? {} : { region }) } }),
    description: "Model platform on AWS Lambda, DynamoDB and S3"
  }
  const stack = new PlatformStack(app, contextString(app, "stackName") ?? "ModelPlatform", props)
  return { app, stack }
}

if (process.argv[1] !== undefined && Path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { app } = await buildApp()
  app.synth()
}
