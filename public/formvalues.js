// The values of the provider forms (edit, Quick add, Custom add, a provider's keys): read, trimmed
// and checked; a bad one throws invalid() naming its field.

import { t, invalid } from "./core.js";

export function required(value, messageKey, fieldId) {
  const text = String(value).trim();
  if (!text) throw invalid(fieldId, t(messageKey));
  return text;
}

// One model per line: its id, or its id and a kind after a space ("bge-m3 embedding").
export function modelLines(text, fieldId) {
  const models = text
    .split("\n")
    .map((m) => m.trim())
    .filter(Boolean)
    .map((line) => {
      const [id, kind, ...rest] = line.split(/\s+/);
      return kind && !rest.length ? { id, kind: kind.toLowerCase() } : line;
    });
  if (!models.length) throw invalid(fieldId, t("form.needModels"));
  return models;
}

export function integer(value, fallback, labelKey, fieldId) {
  const text = String(value).trim();
  if (text === "") return fallback;
  if (!/^-?\d+$/.test(text)) throw invalid(fieldId, t("form.notInteger", { field: t(labelKey) }));
  return Number(text);
}

// A timeout field holds seconds (the API takes ms); empty: the default.
export function timeoutMs(value, fieldId) {
  const text = String(value).trim();
  if (text === "") return null;
  const seconds = Number(text);
  if (!(seconds > 0)) throw invalid(fieldId, t("form.badTimeout"));
  return Math.round(seconds * 1000);
}

// The keys in a field: one per line, blank lines and repeats dropped.
export function keyLines(text) {
  return [
    ...new Set(
      String(text)
        .split("\n")
        .map((k) => k.trim())
        .filter(Boolean),
    ),
  ];
}

export function requiredKeys(text, fieldId) {
  const keys = keyLines(text);
  if (!keys.length) throw invalid(fieldId, t("form.needKey"));
  return keys;
}

export function keyCountText(text) {
  const n = keyLines(text).length;
  return n ? t("form.keysCount", { n }) : t("form.keysHelp");
}
