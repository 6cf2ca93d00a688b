/**
 * The names the functions are configured by (Config.ts reads them): the environment variables the
 * CDK stack sets, the default names of the SSM parameters, and the marks of the init phase that
 * scripts/cold-start.ts reads. It imports nothing, so the stack and the scripts (the cold start's
 * floor among them) can name them without loading the platform.
 */

/** The environment variables the functions read. */
export const ENV = {
  /** The DynamoDB table of the stores. */
  table: "TABLE_NAME",
  /** The S3 bucket of the blob store. */
  bucket: "BUCKET_NAME",
  /** The name of the SSM String parameter holding the catalogue JSON. */
  catalogueParameter: "CATALOGUE_PARAMETER",
  /** The email of the owner account made at first start. */
  ownerEmail: "OWNER_EMAIL",
  /** The name of the SSM SecureString parameter holding the owner key's secret. */
  ownerKeySecretId: "OWNER_KEY_SECRET_ID",
  /** Optional: the platform's public base URL (pay_url); unset, each request's own address. */
  publicUrl: "PUBLIC_URL",
  /** The account service's public address; unset, PUBLIC_URL + /accounts (Accounts.ts). */
  accountsUrl: "ACCOUNTS_URL",
  /** `smtp://user:pass@host:port` or `smtps://…`: the account service's mail. Unset or empty: no account service. */
  smtpUrl: "SMTP_URL",
  /** The From address of that mail; required with SMTP_URL. */
  smtpFrom: "SMTP_FROM",
  /** The platform's client secret at the agent approvals API: the same in every function (agents/PlatformClient.ts). */
  platformClientSecret: "PLATFORM_CLIENT_SECRET",
  /** The platform's service assertion key, a P-256 private JWK: the same in every function (agents/ServiceAssertions.ts). */
  platformSigningKey: "PLATFORM_SIGNING_KEY",
  /** The name of the SSM SecureString parameter holding Stripe's secret key (sk_…), read when the catalogue names Stripe. */
  stripeSecretKeyParameter: "STRIPE_SECRET_KEY_PARAMETER",
  /** The name of the SSM SecureString parameter holding the Stripe webhook endpoint's signing secret (whsec_…). */
  stripeWebhookSecretParameter: "STRIPE_WEBHOOK_SECRET_PARAMETER",
  /** Optional: the bearer token that may read GET /metrics (docs/operations.md "Metrics"). */
  metricsToken: "METRICS_TOKEN",
  /** The CloudWatch namespace of the EMF metric lines (docs/operations.md "Metrics"); default ModelPlatform. */
  metricsNamespace: "METRICS_NAMESPACE",
  /** Optional: the operators' keys, `name:sha256-hex` entries (docs/operations.md "The operator console"). */
  operatorKeys: "OPERATOR_KEYS"
} as const

export const DEFAULT_CATALOGUE_PARAMETER = "/model-platform/catalogue"
export const DEFAULT_OWNER_KEY_PARAMETER = "/model-platform/owner-key"
export const DEFAULT_STRIPE_SECRET_KEY_PARAMETER = "/model-platform/stripe-secret-key"
export const DEFAULT_STRIPE_WEBHOOK_SECRET_PARAMETER = "/model-platform/stripe-webhook-secret"

/**
 * Points of the entry point's init phase (src/lambda.ts), as performance marks that
 * scripts/cold-start.ts reads: the bundle's code evaluated, the catalogue read, the platform built.
 */
export const INIT_MARKS = {
  evaluated: "model-platform:evaluated",
  catalogue: "model-platform:catalogue-read",
  ready: "model-platform:ready"
} as const
