// Drives headless Chromium (Debian's, /usr/bin/chromium) against a running `gorag review`, for
// tests/review_desk.rs: each command logs in as a browser would, acts with the keyboard only,
// and prints one JSON line of what the page showed and did.
//
//   node desk.mjs answer URL TOKEN KEY [--search TEXT] [--screenshot FILE]   (KEY 0: the
//                                                              proposal the text was held for)
//   node desk.mjs accept URL TOKEN LABEL NAME [--screenshot FILE]
//   node desk.mjs pair URL TOKEN_A TOKEN_B
//   node desk.mjs undo URL TOKEN KEY [--screenshot FILE]       answer with KEY, then `u`
//   node desk.mjs linger URL TOKEN KEY                         answer, then read the message 7 s on
//   node desk.mjs wrong URL TOKEN [--screenshot FILE]          log in with a wrong token
//   node desk.mjs revoked URL TOKEN [--screenshot FILE]        logged in, wait to be sent back
//   node desk.mjs search URL TOKEN QUERY FILE [--screenshot F] logged in (writes FILE.ready), then
//                                                              once FILE exists: `/` QUERY
import { chromium } from "playwright-core";

const [command, url, ...rest] = process.argv.slice(2);
const option = (name) => {
  const at = rest.indexOf(name);
  return at >= 0 ? rest[at + 1] : undefined;
};

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync"],
});

async function login(token) {
  const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
  const page = await context.newPage();
  await page.goto(url);
  await page.waitForSelector("#token", { state: "visible" });
  await page.fill("#token", token);
  await page.keyboard.press("Enter");
  await page.waitForSelector("#item:not([hidden]), #empty:not([hidden])");
  return page;
}

// The item on the page once one is shown: its id and kind.
async function shown(page) {
  await page.waitForSelector("#item:not([hidden])", { timeout: 60_000 });
  return page.evaluate(() => {
    const kind = document.querySelector("#item [data-kind]").dataset.kind;
    const text = document.querySelector("#text");
    const id = document.querySelector("#item .muted").textContent.split(" · ")[0];
    return { kind, id, text: text ? text.textContent : null };
  });
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const flashText = (page) => page.evaluate(() => document.querySelector("#flash").textContent);

async function sent(page) {
  await page.waitForFunction(() => /^(sent|accepted|rejected)/.test(document.querySelector("#flash").textContent));
  return page.evaluate(() => document.querySelector("#flash").textContent);
}

// Log in, take the item shown, answer it with `key`: the page, the item, what the page said.
async function answerWith(token, key) {
  const page = await login(token);
  const item = await shown(page);
  await page.keyboard.press(key);
  return { page, item, said: await sent(page) };
}

let result;
try {
  if (command === "answer") {
    const [token, key] = rest;
    const page = await login(token);
    const item = await shown(page);
    const search = option("--search");
    let label;
    if (search) {
      await page.keyboard.press("/");
      await page.keyboard.type(search);
      label = await page.getAttribute("#matches li.first", "data-label");
      if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
      await page.keyboard.press("Enter");
    } else if (key === "0") {
      label = await page.getAttribute("#proposal li", "data-proposal");
      if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
      await page.keyboard.press(key);
    } else {
      label = await page.getAttribute(`ol.candidates li:nth-child(${key})`, "data-label");
      if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
      await page.keyboard.press(key);
    }
    result = { ...item, label, flash: await sent(page) };
  } else if (command === "accept") {
    const [token, label, name] = rest;
    const page = await login(token);
    const item = await shown(page);
    await page.fill("#proposal-label", label);
    await page.fill("#proposal-name", name);
    if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
    await page.locator("#proposal-name").blur();
    await page.keyboard.press("a");
    result = { ...item, flash: await sent(page) };
  } else if (command === "pair") {
    const [a, b] = rest;
    const first = await shown(await login(a));
    const second = await shown(await login(b));
    result = { first: first.id, second: second.id };
  } else if (command === "undo") {
    const [token, key] = rest;
    const { page, item, said } = await answerWith(token, key);
    await page.keyboard.press("u");
    await page.waitForFunction(() => /^taken back/.test(document.querySelector("#flash").textContent));
    // The page asks for its next item once the undo is done: the one taken back, if it worked.
    await page.waitForFunction((id) => document.querySelector("#item .muted").textContent.startsWith(id + " "), item.id, { timeout: 10_000 }).catch(() => {});
    if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
    const again = await shown(page);
    result = { ...item, said, flash: await flashText(page), again: again.id };
  } else if (command === "linger") {
    const [token, key] = rest;
    const { page, item, said } = await answerWith(token, key);
    await sleep(7000);
    result = { ...item, said, later: await flashText(page) };
  } else if (command === "wrong") {
    const [token] = rest;
    const context = await browser.newContext({ viewport: { width: 1100, height: 760 } });
    const page = await context.newPage();
    await page.goto(url);
    await page.waitForSelector("#token", { state: "visible" });
    await page.fill("#token", token);
    await page.keyboard.press("Enter");
    await page.waitForFunction(() => document.querySelector("#login-error").textContent.length > 0);
    if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
    result = { error: await page.evaluate(() => document.querySelector("#login-error").textContent) };
  } else if (command === "revoked") {
    const [token] = rest;
    const page = await login(token);
    const held = await shown(page);
    // The page polls every few seconds: once the login is gone it shows the form, and why.
    await page.waitForSelector("#login:not([hidden])", { timeout: 60_000 });
    await page.waitForFunction(() => document.querySelector("#login-error").textContent.length > 0);
    if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
    result = { held: held.id, error: await page.evaluate(() => document.querySelector("#login-error").textContent) };
  } else if (command === "search") {
    const [token, query, file] = rest;
    const fs = await import("node:fs");
    const page = await login(token);
    fs.writeFileSync(file + ".ready", "");
    while (!fs.existsSync(file)) await sleep(100);
    await page.keyboard.press("/");
    await page.keyboard.type(query);
    // The search refreshes the labels as it opens; the first match, once there is one.
    await page.waitForSelector("#matches li.first", { timeout: 10_000 });
    if (option("--screenshot")) await page.screenshot({ path: option("--screenshot") });
    result = { label: await page.getAttribute("#matches li.first", "data-label") };
  } else {
    throw new Error(`unknown command ${command}`);
  }
} finally {
  await browser.close();
}
console.log(JSON.stringify(result));
