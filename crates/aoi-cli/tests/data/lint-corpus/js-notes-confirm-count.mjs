#!/usr/bin/env node
// js-notes-confirm-count: js-notes with the fault "confirm-count" switched on (the list is at the top of js-notes.mjs).
import { main } from "./js-notes.mjs";

await main("confirm-count");
