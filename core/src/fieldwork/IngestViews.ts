/**
 * How the participant flow shows its records (docs/resources.md "Fieldwork"), and the rules read
 * from them: a participant's state, and whether answers fit the project's questions.
 */
import type { ItemRecord } from "../datasets/Records.ts"
import type { ParticipantRecord, ProjectRecord } from "./Records.ts"
import type { Answer, Answers, IngestProject, Participant, ParticipantState, Question, Take } from "./Schemas.ts"

/** The flow's take upload and list, a route with a larger body (http/RequestLimits.ts). */
export const INGEST_ITEMS_PATH = "/ingest/items"

/** The flow's endpoints, for a client that discovers them (GET /ingest/project). */
export const INGEST_ENDPOINTS = [
  { method: "GET", path: "/ingest/project" },
  { method: "GET", path: "/ingest/challenge" },
  { method: "POST", path: "/ingest/participants" },
  { method: "GET", path: "/ingest/participant" },
  { method: "POST", path: "/ingest/participant/consent" },
  { method: "POST", path: INGEST_ITEMS_PATH },
  { method: "GET", path: INGEST_ITEMS_PATH },
  { method: "POST", path: "/ingest/participant/withdraw" }
] as const

/** The project as a participant sees it; a take is at most `maxTakeBytes`, the shell's own limit. */
export const projectView = (p: ProjectRecord, maxTakeBytes: number): IngestProject => ({
  id: p.id,
  name: p.name,
  data_type: "audio",
  prompts: p.prompts,
  capture: { ...p.capture, max_bytes: Math.min(p.capture.max_bytes, maxTakeBytes) },
  limits: p.limits,
  questions: p.questions,
  consent: p.consent,
  endpoints: INGEST_ENDPOINTS
})

export const participantState = (project: ProjectRecord, p: ParticipantRecord): ParticipantState => {
  if (p.withdrawn_at !== null) return "withdrawn"
  if (p.consent === null || p.consent.version !== project.consent.version) return "needs_consent"
  const { takes_per_participant, takes_per_prompt } = project.limits
  const allSent = project.prompts.every((prompt) => p.takes.filter((t) => t.prompt_id === prompt.id).length >= takes_per_prompt)
  return p.takes.length >= takes_per_participant || allSent ? "complete" : "active"
}

export const participantView = (project: ProjectRecord, p: ParticipantRecord): Participant => {
  const left = Math.max(0, project.limits.takes_per_participant - p.takes.length)
  return {
    id: p.id,
    state: participantState(project, p),
    consent: {
      version: p.consent?.version ?? null,
      given: p.consent?.given ?? {},
      given_at: p.consent?.given_at ?? null,
      current: p.consent !== null && p.consent.version === project.consent.version
    },
    prompts: project.prompts.map((prompt) => {
      const takes = p.takes.filter((t) => t.prompt_id === prompt.id).length
      return { id: prompt.id, text: prompt.text, takes, remaining: Math.min(left, Math.max(0, project.limits.takes_per_prompt - takes)) }
    }),
    created_at: p.created_at
  }
}

export const takeView = (item: ItemRecord): Take => ({
  id: item.id,
  prompt_id: item.prompt_id ?? "",
  status: item.status,
  bytes: item.bytes,
  duration_ms: item.duration_ms ?? 0,
  sha256: item.sha256,
  created_at: item.created_at,
  reviewed_at: item.reviewed_at,
  review_note: item.review_note
})

const fits = (q: Question, a: Answer): boolean => {
  switch (q.kind) {
    case "text":
      return typeof a === "string" && a.length <= 2000
    case "number":
      return typeof a === "number"
    case "boolean":
      return typeof a === "boolean"
    case "choice":
      return typeof a === "string" && q.options.includes(a)
    case "multi_choice":
      return Array.isArray(a) && a.every((x) => q.options.includes(x)) && new Set(a).size === a.length
  }
}

/** Why the answers do not fit the questions, or undefined. */
export const answersProblem = (questions: ReadonlyArray<Question>, answers: Answers): string | undefined => {
  for (const id of Object.keys(answers)) {
    if (!questions.some((q) => q.id === id)) return `"${id.slice(0, 64)}" is not a question of this project.`
  }
  for (const q of questions) {
    const a = answers[q.id]
    if (a === undefined || (q.required && Array.isArray(a) && a.length === 0)) {
      if (q.required) return `Question ${q.id} needs an answer.`
      continue
    }
    if (!fits(q, a)) {
      return q.kind === "choice" || q.kind === "multi_choice"
        ? `The answer to ${q.id} must be ${q.kind === "choice" ? "one" : "a list"} of: ${q.options.join(", ")}.`
        : `The answer to ${q.id} must be a ${q.kind}.`
    }
  }
  return undefined
}
