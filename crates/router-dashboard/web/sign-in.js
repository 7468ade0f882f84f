// The page a mailed sign-in link opens: the button spends the link with a
// same-origin JSON call and says plainly when the link is used up or
// expired. Without JavaScript the form posts itself.
import { call, problem } from "./api.js";

const form = document.getElementById("redeem");
if (form) {
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const status = document.getElementById("status");
    const button = form.querySelector("button");
    button.disabled = true;
    status.textContent = "Signing in…";
    const token = form.elements.token.value;
    const answer = await call("POST", "/api/auth/sign-in", { token });
    if (answer.status === 200) {
      location.assign("/account/usage");
      return;
    }
    const main = document.getElementById("main");
    main.replaceChildren();
    const heading = document.createElement("h1");
    heading.textContent = answer.status === 400 && answer.body?.error?.code === "sign_in_link_invalid"
      ? "This sign-in link has expired or was already used"
      : "Signing in did not work";
    const text = document.createElement("p");
    text.textContent = problem(answer);
    const again = document.createElement("p");
    const link = document.createElement("a");
    link.href = "/account/sign-in";
    link.textContent = "Ask for a new sign-in link";
    again.append(link);
    main.append(heading, text, again);
    heading.tabIndex = -1;
    heading.focus();
  });
}
