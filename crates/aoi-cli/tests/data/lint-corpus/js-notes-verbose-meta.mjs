#!/usr/bin/env node
// js-notes-verbose-meta: js-notes with the fault "verbose-meta" switched on (the list is at the top of js-notes.mjs).
import { main } from "./js-notes.mjs";

await main("verbose-meta");
