/**
 * The payload 2.0 event processor, as tables over literal events (shaped as API Gateway and
 * Function URLs send them) and literal responses, in the style of Hono's handler.test.ts.
 */
import type { APIGatewayProxyEventV2 } from "aws-lambda"
import { describe, expect, it } from "vitest"
import { isTextualContentType, payloadV2 } from "../src/Events.ts"

/** An API Gateway HTTP API event, as in AWS's documentation of payload format 2.0. */
const httpApiEvent: APIGatewayProxyEventV2 = {
  version: "2.0",
  routeKey: "$default",
  rawPath: "/my/path",
  rawQueryString: "",
  headers: {
    "accept": "application/json",
    "host": "id.execute-api.us-east-1.amazonaws.com",
    "user-agent": "agent"
  },
  requestContext: {
    accountId: "123456789012",
    apiId: "api-id",
    domainName: "id.execute-api.us-east-1.amazonaws.com",
    domainPrefix: "id",
    http: { method: "GET", path: "/my/path", protocol: "HTTP/1.1", sourceIp: "192.0.2.1", userAgent: "agent" },
    requestId: "id",
    routeKey: "$default",
    stage: "$default",
    time: "12/Mar/2020:19:03:58 +0000",
    timeEpoch: 1583348638390
  },
  isBase64Encoded: false
}

/** A Lambda Function URL event: the same format, its own domain. */
const functionUrlEvent: APIGatewayProxyEventV2 = {
  version: "2.0",
  routeKey: "$default",
  rawPath: "/keys",
  rawQueryString: "limit=5",
  cookies: ["session=abc"],
  headers: {
    "content-type": "application/json",
    "host": "abcdefghijklmnop.lambda-url.eu-west-1.on.aws",
    "x-amzn-trace-id": "Root=1-5e6722a7-cc56xmpl46db7ae02d4da47e"
  },
  queryStringParameters: { limit: "5" },
  requestContext: {
    accountId: "anonymous",
    apiId: "abcdefghijklmnop",
    domainName: "abcdefghijklmnop.lambda-url.eu-west-1.on.aws",
    domainPrefix: "abcdefghijklmnop",
    http: { method: "POST", path: "/keys", protocol: "HTTP/1.1", sourceIp: "203.0.113.7", userAgent: "curl/8.0" },
    requestId: "id",
    routeKey: "$default",
    stage: "$default",
    time: "21/Nov/2026:22:30:00 +0000",
    timeEpoch: 1795300200000
  },
  body: "eyJuYW1lIjoiY2kifQ==",
  isBase64Encoded: true
}

const event = (overrides: Partial<APIGatewayProxyEventV2>, method = "GET"): APIGatewayProxyEventV2 => {
  const requestContext = overrides.requestContext ?? httpApiEvent.requestContext
  return {
    ...httpApiEvent,
    ...overrides,
    requestContext: { ...requestContext, http: { ...requestContext.http, method } }
  }
}

describe("payload 2.0 event -> Request", () => {
  it("accepts payload 2.0 events only", () => {
    expect(payloadV2.accepts(httpApiEvent)).toBe(true)
    expect(payloadV2.accepts(functionUrlEvent)).toBe(true)
    // API Gateway REST API (v1) and ALB events have no rawPath / requestContext.http.
    expect(payloadV2.accepts({ httpMethod: "GET", path: "/", requestContext: { stage: "prod" } })).toBe(false)
    expect(payloadV2.accepts({ httpMethod: "GET", path: "/", requestContext: { elb: { targetGroupArn: "arn" } } })).toBe(false)
    // A REST API event behind a custom domain also carries rawPath, but no http.
    expect(payloadV2.accepts({ rawPath: "/", requestContext: { httpMethod: "GET" } })).toBe(false)
    expect(payloadV2.accepts(undefined)).toBe(false)
  })

  const urls: ReadonlyArray<[string, Partial<APIGatewayProxyEventV2>, string]> = [
    ["path, no query", {}, "https://id.execute-api.us-east-1.amazonaws.com/my/path"],
    [
      "repeated parameters and percent-encodings stay as sent",
      { rawQueryString: "tag=a&tag=b&q=hello%20world&plus=a+b&jp=%E6%97%A5%E6%9C%AC&empty=&amp=%26" },
      "https://id.execute-api.us-east-1.amazonaws.com/my/path?tag=a&tag=b&q=hello%20world&plus=a+b&jp=%E6%97%A5%E6%9C%AC&empty=&amp=%26"
    ],
    ["an encoded path stays encoded", { rawPath: "/models/a%2Fb%20c" }, "https://id.execute-api.us-east-1.amazonaws.com/models/a%2Fb%20c"],
    ["an empty rawPath is the root", { rawPath: "" }, "https://id.execute-api.us-east-1.amazonaws.com/"]
  ]
  it.each(urls)("url: %s", (_, overrides, url) => {
    expect(payloadV2.toRequest(event(overrides)).url).toBe(url)
  })

  it("query parameters read back as the client sent them", () => {
    const request = payloadV2.toRequest(event({ rawQueryString: "tag=a&tag=b&q=hello%20world&plus=a+b&jp=%E6%97%A5" }))
    const params = new URL(request.url).searchParams
    expect(params.getAll("tag")).toEqual(["a", "b"])
    expect(params.get("q")).toBe("hello world")
    expect(params.get("plus")).toBe("a b")
    expect(params.get("jp")).toBe("日")
  })

  it("the host is the request context's domain, never the Host header (a client writes that)", () => {
    const withoutDomain = event({
      headers: { ...httpApiEvent.headers, host: "evil.example" },
      requestContext: { ...httpApiEvent.requestContext, domainName: "" }
    })
    expect(new URL(payloadV2.toRequest(withoutDomain).url).host).toBe("localhost")
    const spoofed = event({ headers: { ...httpApiEvent.headers, host: "evil.example" } })
    expect(new URL(payloadV2.toRequest(spoofed).url).host).toBe("id.execute-api.us-east-1.amazonaws.com")
    const custom = event({ requestContext: { ...httpApiEvent.requestContext, domainName: "api.example.com" } })
    expect(new URL(payloadV2.toRequest(custom).url).host).toBe("api.example.com")
  })

  const methods = ["GET", "POST", "PUT", "PATCH", "DELETE", "OPTIONS", "HEAD"]
  it.each(methods)("method %s comes from requestContext.http", (method) => {
    expect(payloadV2.toRequest(event({}, method)).method).toBe(method)
  })

  const headerCases: ReadonlyArray<[string, Partial<APIGatewayProxyEventV2>, Record<string, string | null>]> = [
    [
      "repeated headers arrive joined with commas and stay so",
      { headers: { "accept": "text/html, application/json", "x-forwarded-for": "198.51.100.1, 203.0.113.7" } },
      { "accept": "text/html, application/json", "x-forwarded-for": "198.51.100.1, 203.0.113.7" }
    ],
    [
      "the cookies array becomes one Cookie header",
      { cookies: ["a=1", "b=two", "c=x%3Dy"] },
      { cookie: "a=1; b=two; c=x%3Dy" }
    ],
    ["no cookies, no Cookie header", { cookies: [] }, { cookie: null }],
    [
      "an authorization header passes unchanged",
      { headers: { authorization: "Bearer mpk_abc" } },
      { authorization: "Bearer mpk_abc" }
    ],
    [
      "a value beyond ASCII is percent-encoded rather than refused",
      { headers: { "x-name": "José ✓" } },
      { "x-name": "Jos%C3%A9%20%E2%9C%93" }
    ],
    ["an undefined value is skipped", { headers: { "x-missing": undefined, "x-present": "1" } }, { "x-missing": null, "x-present": "1" }]
  ]
  it.each(headerCases)("headers: %s", (_, overrides, expected) => {
    const request = payloadV2.toRequest(event(overrides))
    for (const [name, value] of Object.entries(expected)) expect(request.headers.get(name)).toBe(value)
  })

  const bodies: ReadonlyArray<[string, Partial<APIGatewayProxyEventV2>, string, ArrayLike<number>]> = [
    ["a text body", { body: '{"name":"x"}', isBase64Encoded: false }, "POST", new TextEncoder().encode('{"name":"x"}')],
    ["a base64 JSON body", { body: "eyJuYW1lIjoieCJ9", isBase64Encoded: true }, "POST", new TextEncoder().encode('{"name":"x"}')],
    ["a base64 binary body", { body: "AP8BgH8=", isBase64Encoded: true }, "PUT", [0, 255, 1, 128, 127]],
    ["a text body beyond ASCII", { body: "héllo ✓ 日本", isBase64Encoded: false }, "POST", new TextEncoder().encode("héllo ✓ 日本")],
    ["an empty body", { body: "", isBase64Encoded: false }, "POST", []],
    ["a body on GET is dropped", { body: "ignored", isBase64Encoded: false }, "GET", []]
  ]
  it.each(bodies)("body: %s", async (_, overrides, method, bytes) => {
    const request = payloadV2.toRequest(event(overrides, method))
    expect(Array.from(new Uint8Array(await request.arrayBuffer()))).toEqual(Array.from(bytes))
  })

  it("a Function URL event becomes the same kind of Request", async () => {
    const request = payloadV2.toRequest(functionUrlEvent)
    expect(request.method).toBe("POST")
    expect(request.url).toBe("https://abcdefghijklmnop.lambda-url.eu-west-1.on.aws/keys?limit=5")
    expect(request.headers.get("cookie")).toBe("session=abc")
    expect(request.headers.get("content-type")).toBe("application/json")
    expect(await request.json()).toEqual({ name: "ci" })
  })

  it("the abort signal is the Request's", () => {
    const controller = new AbortController()
    const request = payloadV2.toRequest(httpApiEvent, { signal: controller.signal })
    controller.abort()
    expect(request.signal.aborted).toBe(true)
  })

  it("a header name a Request refuses throws a TypeError", () => {
    expect(() => payloadV2.toRequest(event({ headers: { "bad name": "x" } }))).toThrow(TypeError)
  })
})

describe("Response -> payload 2.0 result", () => {
  const png = new Uint8Array([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0xff])
  const latin1 = new Uint8Array([0x63, 0x61, 0x66, 0xe9]) // "café" in ISO-8859-1: not UTF-8
  const results: ReadonlyArray<[string, () => Response, { body: string; isBase64Encoded: boolean }]> = [
    ["JSON as text", () => Response.json({ ok: "✓" }), { body: '{"ok":"✓"}', isBase64Encoded: false }],
    [
      "text/html as text",
      () => new Response("<html>é</html>", { headers: { "content-type": "text/html; charset=utf-8" } }),
      { body: "<html>é</html>", isBase64Encoded: false }
    ],
    [
      "a +json type as text",
      () => new Response("{}", { headers: { "content-type": "application/problem+json" } }),
      { body: "{}", isBase64Encoded: false }
    ],
    [
      "an event stream as text",
      () => new Response("data: 1\n\n", { headers: { "content-type": "text/event-stream" } }),
      { body: "data: 1\n\n", isBase64Encoded: false }
    ],
    [
      "a binary type as base64",
      () => new Response(png, { headers: { "content-type": "image/png" } }),
      { body: "iVBORw0KGgoA/w==", isBase64Encoded: true }
    ],
    [
      "octet-stream as base64 even when it happens to be text",
      () => new Response("abc", { headers: { "content-type": "application/octet-stream" } }),
      { body: "YWJj", isBase64Encoded: true }
    ],
    [
      "a text type whose bytes are not UTF-8 as base64",
      () => new Response(latin1, { headers: { "content-type": "text/plain; charset=iso-8859-1" } }),
      { body: "Y2Fm6Q==", isBase64Encoded: true }
    ],
    [
      "a compressed body as base64",
      () => new Response("abc", { headers: { "content-type": "application/json", "content-encoding": "gzip" } }),
      { body: "YWJj", isBase64Encoded: true }
    ],
    [
      "no content type, UTF-8 bytes, as text",
      () => new Response(new TextEncoder().encode("plain")),
      { body: "plain", isBase64Encoded: false }
    ],
    ["no content type, other bytes, as base64", () => new Response(png), { body: "iVBORw0KGgoA/w==", isBase64Encoded: true }],
    ["no body", () => new Response(null, { status: 204 }), { body: "", isBase64Encoded: false }]
  ]
  it.each(results)("body: %s", async (_, response, expected) => {
    const result = await payloadV2.toResult(response())
    expect({ body: result.body, isBase64Encoded: result.isBase64Encoded }).toEqual(expected)
  })

  it("status and headers pass; repeated headers are joined; Set-Cookie goes to cookies", async () => {
    const headers = new Headers({ "content-type": "application/json", "x-request-id": "r1" })
    headers.append("vary", "Origin")
    headers.append("vary", "Accept-Encoding")
    headers.append("set-cookie", "a=1; Path=/; HttpOnly")
    headers.append("set-cookie", "b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT")
    const result = await payloadV2.toResult(new Response("{}", { status: 201, headers }))
    expect(result).toEqual({
      statusCode: 201,
      headers: { "content-type": "application/json", "x-request-id": "r1", "vary": "Origin, Accept-Encoding" },
      cookies: ["a=1; Path=/; HttpOnly", "b=2; Expires=Wed, 21 Oct 2026 07:28:00 GMT"],
      body: "{}",
      isBase64Encoded: false
    })
  })

  it("no Set-Cookie, no cookies field; content-length is left to API Gateway", async () => {
    const result = await payloadV2.toResult(
      new Response("hello", { status: 404, headers: { "content-type": "text/plain", "content-length": "5" } })
    )
    expect(result).toEqual({ statusCode: 404, headers: { "content-type": "text/plain" }, body: "hello", isBase64Encoded: false })
  })
})

describe("textual content types", () => {
  const types: ReadonlyArray<[string, boolean]> = [
    ["application/json", true],
    ["application/json; charset=utf-8", true],
    ["application/ld+json", true],
    ["application/vnd.api+json", true],
    ["application/xml", true],
    ["image/svg+xml", true],
    ["text/plain", true],
    ["text/csv", true],
    ["text/event-stream", true],
    ["application/javascript", true],
    ["application/x-www-form-urlencoded", true],
    ["application/x-ndjson", true],
    ["image/png", false],
    ["audio/wav", false],
    ["application/octet-stream", false],
    ["application/pdf", false],
    ["application/zip", false],
    ["application/jsonl-but-not", false],
    ["multipart/form-data; boundary=x", false]
  ]
  it.each(types)("%s -> %s", (type, textual) => {
    expect(isTextualContentType(type)).toBe(textual)
  })
})
