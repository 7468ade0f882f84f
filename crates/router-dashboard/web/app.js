// The dashboard's entry: who is signed in, the navigation, then the page
// the path names (pages.js). Signed out, every page is the sign-in form.
import { call, el, problem } from "./api.js";
import { pages } from "./pages.js";

const main = document.getElementById("main");

function pageOf(path) {
  const rest = path.replace(/^\/account\/?/, "").replace(/\/$/, "");
  if (path === "/" || rest === "") return { name: "", arg: null };
  const [name, arg] = rest.split("/");
  return { name, arg: arg || null };
}

async function start() {
  const session = await call("GET", "/api/auth/session");
  let { name, arg } = pageOf(location.pathname);
  if (session.status !== 200) {
    if (name !== "sign-in") history.replaceState(null, "", "/account/sign-in");
    return show("sign-in", null, null);
  }
  if (name === "" || name === "sign-in") {
    name = "usage";
    history.replaceState(null, "", "/account/usage");
  }
  document.getElementById("nav").hidden = false;
  document.getElementById("who").hidden = false;
  document.getElementById("email").textContent = session.body.email;
  for (const link of document.querySelectorAll("#nav a")) {
    if (link.getAttribute("href") === `/account/${name}`) link.setAttribute("aria-current", "page");
  }
  document.getElementById("sign-out").addEventListener("click", async () => {
    const answer = await call("POST", "/api/auth/sign-out");
    if (answer.status === 204) location.assign("/account/sign-in");
    else main.prepend(el("p", { class: "error", role: "alert" }, problem(answer)));
  });
  return show(name, arg, session.body);
}

async function show(name, arg, session) {
  const page = pages[name];
  main.replaceChildren();
  if (!page) {
    main.append(el("h1", {}, "No such page"), el("p", {}, el("a", { href: "/account/usage" }, "Go to usage")));
    return;
  }
  try {
    await page(main, { arg, session });
  } catch (error) {
    main.append(el("p", { class: "error", role: "alert" }, String(error.message || error)));
  }
  document.title = `${main.querySelector("h1")?.textContent || "Account"} · Router`;
  document.body.dataset.ready = name;
}

start();
