from django.urls import path

from . import views

urlpatterns = [
    path("add/", views.enqueue_add, name="demo-add"),
    path("words/", views.enqueue_word_count, name="demo-words"),
    path("words/<str:result_id>/", views.task_status, name="demo-words-status"),
]
