#!/usr/bin/env node
// js-notes-full-page: js-notes with the fault "full-page" switched on (the list is at the top of js-notes.mjs).
import { main } from "./js-notes.mjs";

await main("full-page");
