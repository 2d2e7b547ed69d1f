// The pool's collector (HTCondor's): the slot ads its startds offer, which run holds each slot,
// and the slots that refused work and rest a while. Soft state: made again from each connection's
// hello and updates, never stored. It is the negotiation pass's first slot source
// (agent/negotiation.h); another pool's slots would be another source beside it.
//
// `Owner` is whatever offers slots (the pool's startd connection); the collector keeps only weak
// handles to owners and asks `trusted` before it offers an owner's slot for work.
//
// Used only on the agent's thread.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "agent/negotiation.h"
#include "classad/classad.h"

namespace kite::agent {

template <class Owner>
class Collector : public SlotSource {
 public:
  struct Slot {
    std::string name;
    classad::ClassAd ad;
    std::weak_ptr<Owner> owner;
    bool site = false;      // offered by a site (not the desktop's own startd)
    std::string run;        // the run it holds, "" when free
    double cool_until = 0;  // refused or gave up work: offered none before this
  };
  // Whether `owner` may be given work now; asked once per owner in each FreeSlots. Those that
  // may not are kept for TakeDistrusted.
  using Trusted = std::function<bool(const Owner&)>;

  Collector(std::function<double()> now, Trusted trusted)
      : now_(std::move(now)), trusted_(std::move(trusted)) {}

  // The slots `owner` offers (its hello): each takes the place of a slot of the same name.
  void Offer(const std::shared_ptr<Owner>& owner,
             std::vector<std::pair<std::string, classad::ClassAd>> ads, bool site) {
    for (auto& [name, ad] : ads) {
      Slot& slot = slots_[name];
      slot.name = name;
      slot.ad = std::move(ad);
      slot.owner = owner;
      slot.site = site;
    }
    ++generation_;
  }
  // A new ad for a slot; false (and nothing changed) when the slot is not `owner`'s.
  bool Update(const Owner& owner, const std::string& name, classad::ClassAd ad) {
    Slot* slot = Find(name);
    if (!slot || slot->owner.lock().get() != &owner) return false;
    slot->ad = std::move(ad);
    ++generation_;
    return true;
  }
  // `owner` is gone: its slots go, as do slots whose owner went without a word.
  void Withdraw(const Owner& owner) {
    size_t before = slots_.size();
    std::erase_if(slots_, [&](const auto& s) {
      auto o = s.second.owner.lock();
      return !o || o.get() == &owner;
    });
    if (slots_.size() != before) ++generation_;
  }

  Slot* Find(const std::string& name) {
    auto it = slots_.find(name);
    return it == slots_.end() ? nullptr : &it->second;
  }
  const Slot* Find(const std::string& name) const {
    auto it = slots_.find(name);
    return it == slots_.end() ? nullptr : &it->second;
  }
  // The slot holds `run` now (a match, or a run its startd still had after a reconnect).
  void Claim(const std::string& name, const std::string& run) {
    if (Slot* s = Find(name)) s->run = run;
  }
  // `run` is over: its slot is free (unless another run took it meanwhile).
  void Release(const std::string& name, const std::string& run) {
    if (Slot* s = Find(name); s && s->run == run) s->run.clear();
  }
  // The slot refused work or stopped a job on its own: none for `seconds`.
  void CoolOff(const std::string& name, double seconds) {
    if (Slot* s = Find(name)) s->cool_until = now_() + seconds;
  }
  const std::map<std::string, Slot>& slots() const { return slots_; }

  // Owners found untrusted by the last FreeSlots (each once).
  std::vector<std::shared_ptr<Owner>> TakeDistrusted() { return std::exchange(distrusted_, {}); }

  // ---- SlotSource ----
  uint64_t generation() const override { return generation_; }
  std::vector<const classad::ClassAd*> AllAds() const override {
    std::vector<const classad::ClassAd*> all;
    for (const auto& [name, slot] : slots_) all.push_back(&slot.ad);
    return all;
  }
  std::vector<SlotOffer> FreeSlots() override {
    double now = now_();
    std::vector<SlotOffer> free;
    std::map<const Owner*, bool> trust;
    for (const auto& [name, slot] : slots_) {
      auto owner = slot.owner.lock();
      if (!owner || !slot.run.empty() || slot.cool_until > now) continue;
      auto [t, first] = trust.try_emplace(owner.get(), false);
      if (first) {
        t->second = trusted_(*owner);
        if (!t->second) distrusted_.push_back(owner);
      }
      if (t->second) free.push_back(SlotOffer{.name = name, .ad = &slot.ad, .site = slot.site});
    }
    return free;
  }

 private:
  std::function<double()> now_;
  Trusted trusted_;
  std::map<std::string, Slot> slots_;  // by slot name
  uint64_t generation_ = 1;            // changes whenever a slot ad comes, goes or changes
  std::vector<std::shared_ptr<Owner>> distrusted_;
};

}  // namespace kite::agent
