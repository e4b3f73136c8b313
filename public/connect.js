// The "Connect a client" panel: a tab per client, with the snippets that point it at this gateway.

import { state, t, byId, el, note, guarded, smallButton, modelCatalog, copyText } from "./core.js";

// The "Connect a client" tabs, in order (each has client.<id> and clientHelp.<id> texts).
const CLIENTS = ["claude", "codex", "gemini", "openai", "apps"];
// A model this version of Claude Code knows, whose handling a gateway model takes on (its
// settings' modelPicker "behavesAs"): without one, Claude Code warns that it does not recognize
// the model and guesses a 1M-token window.
const CLAUDE_BEHAVES_AS = "claude-sonnet-4-6";
// The smallest auto-compact window Claude Code accepts, and the window of CLAUDE_BEHAVES_AS: a
// model's window between the two is where Claude Code is told to compact.
const CLAUDE_MIN_COMPACT = 100000;
const CLAUDE_KNOWN_WINDOW = 200000;

// --- Connect a client -----------------------------------------------------------------------

// Every snippet holds this page's own origin and a placeholder for the token, never a token.
function connectModel() {
  const models = modelCatalog("chat");
  const chosen = state.connect.model;
  if (chosen === "auto" || models.includes(chosen)) return chosen;
  return models[0] || "auto";
}

function clientSnippets(client, origin, model, contextWindow) {
  const token = t("connect.tokenPlaceholder");
  const task = t("connect.taskPlaceholder");
  const shell = (lines) => ({ label: "connect.shell", text: lines.join("\n") });
  const headless = (lines) => ({ label: "connect.headless", text: lines.join("\n") });
  const json = (label, value) => ({ label, text: JSON.stringify(value, null, 2) });
  if (client === "claude") {
    const row = { model, label: `${model} (fllmapi-worker)`, behavesAs: CLAUDE_BEHAVES_AS };
    const compact =
      contextWindow >= CLAUDE_MIN_COMPACT && contextWindow < CLAUDE_KNOWN_WINDOW
        ? [`export CLAUDE_CODE_AUTO_COMPACT_WINDOW="${contextWindow}"`]
        : [];
    return [
      json("connect.claudeFile", { modelPicker: { options: [row] } }),
      shell([
        `export ANTHROPIC_BASE_URL="${origin}"`,
        `export ANTHROPIC_AUTH_TOKEN="${token}"`,
        `export ANTHROPIC_MODEL="${model}"`,
        `export ANTHROPIC_DEFAULT_HAIKU_MODEL="${model}"`,
        ...compact,
        "claude",
      ]),
      headless([`claude -p "${task}"`]),
    ];
  }
  if (client === "codex") {
    return [
      {
        label: "connect.codexFile",
        text: [
          `model = "${model}"`,
          'model_provider = "fllmapi"',
          `model_context_window = ${contextWindow}`,
          "",
          "[model_providers.fllmapi]",
          'name = "fllmapi-worker"',
          `base_url = "${origin}/v1"`,
          'env_key = "FLLMAPI_API_KEY"',
          'wire_api = "responses"',
        ].join("\n"),
      },
      shell([`export FLLMAPI_API_KEY="${token}"`, "codex"]),
      headless([`codex exec --skip-git-repo-check "${task}"`]),
    ];
  }
  if (client === "gemini") {
    const named = model === "auto" ? t("connect.modelPlaceholder") : model;
    return [
      json("connect.geminiFile", { security: { auth: { selectedType: "gemini-api-key" } } }),
      shell([`export GOOGLE_GEMINI_BASE_URL="${origin}"`, `export GEMINI_API_KEY="${token}"`, `gemini -m "${named}"`]),
      headless(["export GEMINI_CLI_TRUST_WORKSPACE=true", `gemini -m "${named}" -p "${task}"`]),
    ];
  }
  if (client === "openai") {
    return [
      {
        label: "connect.python",
        text: [
          "from openai import OpenAI",
          "",
          `client = OpenAI(base_url="${origin}/v1", api_key="${token}")`,
          'answer = client.chat.completions.create(model="' +
            model +
            '", messages=[{"role": "user", "content": "Hello"}])',
          "print(answer.choices[0].message.content)",
        ].join("\n"),
      },
    ];
  }
  return [
    { label: "apps.cherry", text: `${t("apps.address")}: ${origin}\n${t("apps.key")}: ${token}` },
    { label: "apps.openwebui", text: `${t("apps.url")}: ${origin}/v1\n${t("apps.key")}: ${token}` },
    {
      label: "apps.ollama",
      text: `${t("apps.host")}: ${origin}\n${t("apps.header")}: Authorization: Bearer ${token}`,
    },
  ];
}

export function renderConnect() {
  const tabs = byId("connect-tabs");
  tabs.replaceChildren(
    ...CLIENTS.map((id) =>
      el(
        "button",
        {
          type: "button",
          role: "tab",
          "aria-selected": String(id === state.connect.client),
          "data-testid": "connect-tab",
          "data-client": id,
          onclick: () => {
            state.connect.client = id;
            note("connect", "", "");
            renderConnect();
          },
        },
        t(`client.${id}`),
      ),
    ),
  );
  const model = connectModel();
  const select = byId("connect-model");
  select.replaceChildren(
    el("option", { value: "auto" }, t("connect.auto")),
    ...modelCatalog("chat").map((m) => el("option", { value: m }, m)),
  );
  select.value = model;
  const client = state.connect.client;
  byId("connect-window-field").hidden = client !== "claude" && client !== "codex";
  byId("connect-window").value = String(state.connect.window);
  const box = byId("connect");
  box.replaceChildren(el("p", { class: "muted", "data-testid": "connect-help" }, t(`clientHelp.${client}`)));
  for (const snippet of clientSnippets(client, location.origin, model, state.connect.window)) {
    box.append(
      el(
        "div",
        { class: "snippet", "data-testid": "connect-snippet", "data-client": client, "data-label": snippet.label },
        el(
          "div",
          { class: "between" },
          el("span", { class: "label mono" }, t(snippet.label)),
          smallButton(
            "connect-copy",
            "connect.copy",
            guarded("connect", () => copyText(snippet.text)),
          ),
        ),
        el("pre", { class: "code mono", "data-testid": "connect-code" }, snippet.text),
      ),
    );
  }
}
