#!/usr/bin/env node
// wordfreq - word statistics for text files: top, count, grep, vocab (deterministic).
"use strict";

const fs = require("fs");

const USAGE = "usage: wordfreq <top|count|grep|vocab> [options] [FILE...]";
// A word: letters (any script) and digits, with an apostrophe kept between two of them.
const WORD = /[\p{L}\p{N}]+(?:'[\p{L}\p{N}]+)*/gu;
const ONLY_DIGITS = /^\p{N}+$/u;

class Stop extends Error {
  constructor(message, status) {
    super(message);
    this.status = status;
  }
}

function usage() {
  return new Stop(USAGE, 2);
}

function words(text) {
  const out = [];
  for (const m of text.matchAll(WORD)) {
    const w = m[0].toLowerCase();
    if (!ONLY_DIGITS.test(w)) out.push(w);
  }
  return out;
}

function byCodePoint(a, b) {
  return a < b ? -1 : a > b ? 1 : 0;
}

function readInput(name) {
  try {
    return fs.readFileSync(name === "-" ? 0 : name, "utf8");
  } catch (err) {
    throw new Stop(`wordfreq: cannot read ${name}`, 2);
  }
}

function positive(option, value) {
  if (!/^[0-9]+$/.test(value) || Number(value) < 1) {
    throw new Stop(`wordfreq: ${option} must be a positive integer`, 2);
  }
  return Number(value);
}

// Options and operands in any order; `--` ends the options; `-` alone is standard input.
function parse(argv, allowed) {
  const opts = {};
  const operands = [];
  let i = 0;
  let ended = false;
  while (i < argv.length) {
    const arg = argv[i++];
    if (!ended && arg === "--") {
      ended = true;
    } else if (!ended && arg.startsWith("-") && arg !== "-") {
      if (!allowed.includes(arg) || i >= argv.length) throw usage();
      opts[arg] = argv[i++];
    } else {
      operands.push(arg);
    }
  }
  return { opts, operands };
}

function stopWords(opts) {
  if (opts["--stop"] === undefined) return new Set();
  const set = new Set();
  for (const line of readInput(opts["--stop"]).split("\n")) {
    const text = line.trim();
    if (text === "" || text.startsWith("#")) continue;
    for (const w of words(text)) set.add(w);
  }
  return set;
}

function load(operands) {
  const names = operands.length ? operands : ["-"];
  return names.map((name) => ({ name, text: readInput(name) }));
}

function tally(list, stop) {
  const counts = new Map();
  for (const w of list) {
    if (!stop.has(w)) counts.set(w, (counts.get(w) || 0) + 1);
  }
  return counts;
}

function lineCount(text) {
  if (text === "") return 0;
  const newlines = text.split("\n").length - 1;
  return text.endsWith("\n") ? newlines : newlines + 1;
}

function cmdTop(argv) {
  const { opts, operands } = parse(argv, ["-n", "--stop"]);
  const n = opts["-n"] === undefined ? 10 : positive("-n", opts["-n"]);
  const stop = stopWords(opts);
  const inputs = load(operands);
  const counts = tally(inputs.flatMap((f) => words(f.text)), stop);
  const ranked = [...counts].sort((a, b) => b[1] - a[1] || byCodePoint(a[0], b[0]));
  return ranked.slice(0, n).map(([w, c]) => `${c} ${w}\n`).join("");
}

function cmdCount(argv) {
  const { operands } = parse(argv, []);
  const inputs = load(operands);
  let out = "";
  const all = new Set();
  let lines = 0;
  let total = 0;
  for (const f of inputs) {
    const list = words(f.text);
    const unique = new Set(list);
    unique.forEach((w) => all.add(w));
    lines += lineCount(f.text);
    total += list.length;
    out += `${lineCount(f.text)} ${list.length} ${unique.size} ${f.name}\n`;
  }
  if (inputs.length > 1) out += `${lines} ${total} ${all.size} total\n`;
  return out;
}

function cmdGrep(argv) {
  const { operands } = parse(argv, []);
  if (operands.length === 0) throw usage();
  const wanted = words(operands[0]);
  if (wanted.length !== 1 || operands[0].trim().toLowerCase() !== wanted[0]) {
    throw new Stop(`wordfreq: not a word: ${operands[0]}`, 2);
  }
  const inputs = load(operands.slice(1));
  let out = "";
  for (const f of inputs) {
    const lines = f.text.split("\n");
    if (f.text.endsWith("\n")) lines.pop();
    lines.forEach((raw, i) => {
      const line = raw.endsWith("\r") ? raw.slice(0, -1) : raw;
      if (words(line).includes(wanted[0])) {
        out += (inputs.length > 1 ? `${f.name}:` : "") + `${i + 1}:${line}\n`;
      }
    });
  }
  if (out === "") throw new Stop("", 1);
  return out;
}

function cmdVocab(argv) {
  const { opts, operands } = parse(argv, ["--min-count", "--stop"]);
  const min = opts["--min-count"] === undefined ? 1 : positive("--min-count", opts["--min-count"]);
  const stop = stopWords(opts);
  const inputs = load(operands);
  const counts = tally(inputs.flatMap((f) => words(f.text)), stop);
  const kept = [...counts].filter(([, c]) => c >= min).map(([w]) => w);
  return kept.sort(byCodePoint).map((w) => `${w}\n`).join("");
}

const COMMANDS = { top: cmdTop, count: cmdCount, grep: cmdGrep, vocab: cmdVocab };

function main(argv) {
  const command = COMMANDS[argv[0]];
  if (!Object.prototype.hasOwnProperty.call(COMMANDS, argv[0] || "")) throw usage();
  return command(argv.slice(1));
}

try {
  process.stdout.write(main(process.argv.slice(2)));
} catch (err) {
  if (!(err instanceof Stop)) throw err;
  if (err.message) process.stderr.write(err.message + "\n");
  process.exitCode = err.status;
}
